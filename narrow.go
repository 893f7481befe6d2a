package ams

import (
	"context"
	"fmt"
	"reflect"
)

// Narrowed is a store whose transactions a consumer sees through T: the
// interface, declared where it is used, of the methods the consumer
// calls in a transaction. Update hands fn the transaction as T; every
// other method is the Store's. A package that takes its store as such an
// interface (messaging.Store, say) names neither Store nor Tx, and its
// transactions can call only what T lists.
type Narrowed[T any] struct {
	Store
}

// Narrow returns s with its transactions seen as T. It panics when Tx
// does not implement T, so that a wrong T fails where the store is wired,
// not in the first transaction.
func Narrow[T any](s Store) Narrowed[T] {
	if t := reflect.TypeFor[T](); t.Kind() != reflect.Interface || !reflect.TypeFor[Tx]().Implements(t) {
		panic(fmt.Sprintf("ams.Narrow: ams.Tx does not implement %v", t))
	}
	return Narrowed[T]{s}
}

// Update runs fn in one transaction of the store (Store.Update), which
// fn sees as T.
func (n Narrowed[T]) Update(ctx context.Context, fn func(tx T) error) error {
	return n.Store.Update(ctx, func(tx Tx) error { return fn(any(tx).(T)) })
}

package caldav

import "context"

// SyncNotified runs at once what Notify(userID) makes Run start after
// its debounce, and waits for it (for the tests of package caldav_test).
func (w *Worker) SyncNotified(ctx context.Context, userID string) (struct{}, error) {
	w.Notify(userID, nil)
	<-w.kick
	w.syncNotified(ctx)
	w.wg.Wait()
	return struct{}{}, ctx.Err()
}

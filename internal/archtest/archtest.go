// Package archtest holds tests of the code's shape rather than its
// behaviour: see its test file. It has no code of its own.
package archtest

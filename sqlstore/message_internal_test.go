package sqlstore

import (
	"reflect"
	"testing"

	"github.com/amsdev/ams"
)

// TestScanMetadataAsDecode: the shortcut for {} gives what
// ams.DecodeMetadata gives (an empty, non-nil Metadata), and other texts
// still go through it.
func TestScanMetadataAsDecode(t *testing.T) {
	for _, text := range []string{"{}", "", "null", `{"a":"b"}`, `{ }`} {
		want, err := ams.DecodeMetadata(text)
		if err != nil {
			t.Fatal(err)
		}
		var got ams.Metadata
		if err := scanMetadata(&got, text, "message", "msg_1"); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%q: %#v, want %#v", text, got, want)
		}
	}
	var m ams.Metadata
	if err := scanMetadata(&m, "[", "message", "msg_1"); err == nil {
		t.Error("bad metadata accepted")
	}
}

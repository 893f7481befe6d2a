package format

import (
	"testing"
	"time"
)

func TestNumber(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1234: "1,234", 10000: "10,000",
		999999: "999,999", 1000000: "1,000,000", -1234567: "-1,234,567"} {
		if got := Number(n); got != want {
			t.Errorf("Number(%d) = %q, want %q", n, got, want)
		}
	}
	if Number(int(50000)) != "50,000" {
		t.Error("int")
	}
}

func TestTime(t *testing.T) {
	at := time.Date(2026, 11, 24, 18, 30, 0, 0, time.UTC)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if got := Time(at, nil); got != "24 Nov 2026 18:30 UTC" {
		t.Error(got)
	}
	if got := Time(at, berlin); got != "24 Nov 2026 19:30 CET" {
		t.Error(got)
	}
	if got := Date(at.Add(5*time.Hour), berlin); got != "25 Nov 2026" {
		t.Error(got)
	}
}

package ui

import (
	"math"
	"strconv"
	"time"
)

// stamp is a point in time as the pages show it: relative text, with the
// exact UTC time for the datetime and title attributes.
type stamp struct {
	Rel   string // "3 minutes ago", "in 1 hour"
	Exact string // RFC 3339, UTC
}

// fixedStamp is t as a mirror's pages show it: the UTC time to the
// minute, "2026-03-14 16:09 UTC", which stays true however long the page
// is served. The page's script shows it relative to the reader's clock
// (relTime in app.js).
func fixedStamp(t time.Time) stamp {
	return stamp{Rel: t.UTC().Format("2006-01-02 15:04 UTC"), Exact: t.UTC().Format(time.RFC3339)}
}

// timeUnits are the units of relTime, largest first.
var timeUnits = []struct {
	d    time.Duration
	name string
}{
	{365 * 24 * time.Hour, "year"},
	{30 * 24 * time.Hour, "month"},
	{7 * 24 * time.Hour, "week"},
	{24 * time.Hour, "day"},
	{time.Hour, "hour"},
	{time.Minute, "minute"},
}

// relTime says how far t is from now in the largest fitting unit, rounded:
// "3 minutes ago", "in 1 hour". A unit fits from 95% of its length on, so a
// one-week expiry seen a minute after its creation still reads "in 1
// week", not "in 6 days".
func relTime(t, now time.Time) string {
	d := t.Sub(now)
	future := d > 0
	d = d.Abs()
	for _, u := range timeUnits {
		if d < u.d*95/100 {
			continue
		}
		n := int64(math.Round(float64(d) / float64(u.d)))
		text := plural(n, u.name)
		if future {
			return "in " + text
		}
		return text + " ago"
	}
	if future {
		return "in less than a minute"
	}
	return "just now"
}

// plural writes a count and its unit: "1 minute", "2 minutes".
func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

package pastenode

import (
	"strconv"
	"strings"
)

// FormatSize writes a byte count the way people read it, in binary units:
// "512 bytes", "1 byte", "1.5 KiB", "12 MiB". Below 10 of a unit it keeps
// one decimal, unless that decimal is zero. The web pages and pastectl both
// show sizes this way.
func FormatSize(n int64) string {
	if n < 1024 {
		if n == 1 {
			return "1 byte"
		}
		return strconv.FormatInt(n, 10) + " bytes"
	}
	v := float64(n)
	unit := ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		unit = u
		if v < 1024 {
			break
		}
	}
	prec := 0
	if v < 10 {
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	return strings.TrimSuffix(s, ".0") + " " + unit
}

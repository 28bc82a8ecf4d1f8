package payloadlimit

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is a number of bytes. In config it is an integer ("1048576") or a
// number with a unit, as nginx's client_max_body_size writes it: "512k",
// "10m", "1g", also spelled "10MiB", "10MB", "10 mb". Units are powers of
// 1024 whatever the spelling (nginx and Kong do the same), so "1m" and "1MB"
// are both 1048576 bytes.
//
// Written by hand: it is a few lines, and the libraries for it
// (docker/go-units, dustin/go-humanize) each read "MB" as 10^6, which would
// make "1m" and "1MB" differ.
type Size int64

// maxSize bounds a size to what a float64 (protobuf Struct numbers) holds
// exactly.
const maxSize = 1 << 53

var units = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

// ParseSize reads "512", "512k", "10MiB", ...
func ParseSize(s string) (Size, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	mult, ok := units[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q: want bytes or a number with a unit k, m, g (e.g. \"512k\", \"10MiB\")", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: want bytes or a number with a unit k, m, g (e.g. \"512k\", \"10MiB\")", s)
	}
	return fromFloat(s, f*float64(mult))
}

func fromFloat(src string, f float64) (Size, error) {
	if math.IsNaN(f) || f < 0 || f > maxSize {
		return 0, fmt.Errorf("invalid size %s: must be between 0 and %d bytes", src, int64(maxSize))
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("invalid size %s: not a whole number of bytes", src)
	}
	return Size(f), nil
}

// UnmarshalJSON takes a number of bytes or a string with a unit.
func (s *Size) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		v, err := ParseSize(str)
		if err != nil {
			return err
		}
		*s = v
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("expected a size: a number of bytes or a string such as \"10m\"")
	}
	v, err := fromFloat(string(b), f)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalJSON writes the number of bytes.
func (s Size) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(int64(s), 10)), nil }

// ConfigType names the type in the README's configuration table.
func (Size) ConfigType() string { return "size" }

// String is the size in the largest unit that divides it ("10m", "1536k", "7").
func (s Size) String() string {
	for _, u := range []struct {
		n string
		m int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if s != 0 && int64(s)%u.m == 0 {
			return strconv.FormatInt(int64(s)/u.m, 10) + u.n
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

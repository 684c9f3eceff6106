package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/framebus/framebus/protocol"
	"github.com/spf13/pflag"
)

// The flag values of the CLI: each parses what a user types and says
// plainly what is wrong with what it cannot (strconv's and time's errors
// name their functions).

// wholeNumber reads an integer parameter, saying plainly what is wrong
// with one it cannot (strconv's errors name its functions).
func wholeNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is too large", s)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}

// intFlag is an integer flag with wholeNumber's errors.
type intFlag int

func (v *intFlag) Set(s string) error {
	n, err := wholeNumber(s)
	*v = intFlag(n)
	return err
}

// String is "" for zero, so help shows no "(default 0)".
func (v *intFlag) String() string {
	if *v == 0 {
		return ""
	}
	return strconv.Itoa(int(*v))
}

func (v *intFlag) Type() string { return "int" }

// decimalNumber parses a number of 0 or more, with a clear error.
func decimalNumber(s string) (float64, error) {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, fmt.Errorf("%q is not a number of 0 or more", s)
	}
	return n, nil
}

// numberFlag is a decimal flag with decimalNumber's errors.
type numberFlag float64

func (v *numberFlag) Set(s string) error {
	n, err := decimalNumber(s)
	*v = numberFlag(n)
	return err
}

// String is "" for zero, so help shows no "(default 0)".
func (v *numberFlag) String() string {
	if *v == 0 {
		return ""
	}
	return strconv.FormatFloat(float64(*v), 'g', -1, 64)
}

func (v *numberFlag) Type() string { return "number" }

// msDuration is a duration flag that also takes a bare number of
// milliseconds, the seeds' unit: --timeout 2s, --timeout 1500.
type msDuration time.Duration

func (d *msDuration) Set(s string) error {
	var v time.Duration
	if ms, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if math.Abs(ms) >= math.MaxInt64/float64(time.Millisecond) || math.IsNaN(ms) {
			return fmt.Errorf("%q is too long a duration", s)
		}
		v = time.Duration(ms * float64(time.Millisecond))
	} else if v, err = time.ParseDuration(s); err != nil {
		return fmt.Errorf("%q is not a duration; use e.g. 500ms, 2s, 1m, or a number of milliseconds", s)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*d = msDuration(v)
	return nil
}

// String is "" for zero, so help shows no "(default 0s)".
func (d *msDuration) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *msDuration) Type() string { return "duration" }

// tabFlag is --tab: a tab id, checked when given, so an empty one is
// refused rather than read as "the default tab".
type tabFlag string

func (t *tabFlag) Set(s string) error {
	if !protocol.ValidTabID(s) {
		return fmt.Errorf("%q is not a tab id (letters, digits, '-' and '_')", s)
	}
	*t = tabFlag(s)
	return nil
}

func (t *tabFlag) String() string { return string(*t) }
func (t *tabFlag) Type() string   { return "ID" }

// boolFlag is a boolean flag (--flag, --flag=false) with a plain error.
type boolFlag bool

func (b *boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q is not true or false", s)
	}
	*b = boolFlag(v)
	return nil
}

func (b *boolFlag) String() string   { return strconv.FormatBool(bool(*b)) }
func (b *boolFlag) Type() string     { return "bool" }
func (b *boolFlag) IsBoolFlag() bool { return true }

// boolVarP declares a boolean flag that needs no value.
func boolVarP(fs *pflag.FlagSet, p *bool, name, short, usage string) {
	fs.VarPF((*boolFlag)(p), name, short, usage).NoOptDefVal = "true"
}

// mapFlag collects "Name: value" entries (curl's -H) into a map; a name
// given again takes the later value.
type mapFlag map[string]string

// Set takes "Name: value". The name ends at the first colon followed by
// a space, else at the first colon: a selector has colons of its own
// (fill-form's 'input:not([type]): Ann'), a header name none.
func (m mapFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ": ")
	if !ok {
		name, value, ok = strings.Cut(s, ":")
	}
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("%q is not 'Name: value'", s)
	}
	m[name] = strings.TrimSpace(value)
	return nil
}

func (m mapFlag) String() string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+": "+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (m mapFlag) Type() string { return "'Name: value'" }

package kb

import "fmt"

// ErrorList is the errors of a load or a compile that went on past them:
// one per file (a *LoadError) or per entry, in order. Functions return it
// as an error only when it is not empty, with what did load beside it;
// errors.As(err, &list) gets the list, to report each one.
type ErrorList []error

// Error is the first error and how many more there are.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0], len(l)-1)
}

// Unwrap lets errors.Is and errors.As look at every error of the list.
func (l ErrorList) Unwrap() []error { return l }

// Err returns l as an error, or nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

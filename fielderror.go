package claimcheck

import "strings"

// FieldError is an invalid value of a named field: a config key, a
// policy field, a request field. Field is the path as the user writes it
// ("ttl.max_age", then "defaults.ttl.max_age" once the config loader has
// prefixed the section), never a Go type or field name; Got is the value
// as it was written or is in force, already quoted when it was text; Reason
// says what is wrong in words that read after the field
// ("must be positive").
//
// It matches ErrInvalidArgument, so it crosses the HTTP API like every
// other invalid argument.
type FieldError struct {
	Field  string
	Got    string
	Reason string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Field)
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Got != "" {
		b.WriteString(" (got ")
		b.WriteString(e.Got)
		b.WriteString(")")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidArgument }

// Under returns the error with prefix (a section such as "defaults" or
// "namespaces.orders") in front of its field.
func (e *FieldError) Under(prefix string) *FieldError {
	c := *e
	if c.Field == "" {
		c.Field = prefix
	} else if prefix != "" {
		c.Field = prefix + "." + c.Field
	}
	return &c
}

// fieldErr is a *FieldError.
func fieldErr(field, got, reason string) error {
	return &FieldError{Field: field, Got: got, Reason: reason}
}

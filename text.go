package claimcheck

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckText refuses invalid UTF-8 and control characters in a free-text
// field a client sends (content type, labels, consumer names): such
// fields are echoed in answers, headers, logs and the CLI's output, where
// a newline could forge a line and an escape sequence reach a terminal.
// The error is a *FieldError naming field; it matches ErrInvalidArgument.
func CheckText(field, s string) error {
	if !utf8.ValidString(s) {
		return fieldErr(field, "", "not valid UTF-8")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fieldErr(field, "", fmt.Sprintf("control character %U at byte %d is not allowed", []rune(s[i:])[0], i))
	}
	return nil
}

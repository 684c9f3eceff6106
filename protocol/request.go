package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
)

// DecodeRequest decodes the JSON body of a node request (newtab,
// closetab, session start, content) into dst, a pointer to its request
// type, as strictly as a plan: an unknown field, a key given twice or a
// value of the wrong type is a bad_request that names it in plain words.
// what names the request in the message.
func DecodeRequest(data []byte, what string, dst any) error {
	if err := checkText(data, what, what); err != nil {
		return err
	}
	if _, err := decodeObject(data, what); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr):
		return badRequest("%s.%s: must be %s, got a %s", what, typeErr.Field, jsonKind(typeErr.Type), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("%s: %s is not a field of this request", what, strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return badRequest("%s: %v", what, err)
}

// jsonKind says what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

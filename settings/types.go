package settings

import (
	"fmt"
	"time"
)

// Type is what a setting's front-matter value must be. Package plan checks
// each key's value with it when it lints a plan, so a run never starts on
// a value it would misread.
type Type int

// The types of front-matter values.
const (
	TypeString      Type = iota + 1 // a string
	TypeScalar                      // any single value (read as text)
	TypePositiveInt                 // 1 or more
	TypeDuration                    // "20m", or a number of seconds
	TypeNames                       // a list of environment variable names
	TypeMapping                     // a mapping (name: value)
	TypeBool                        // true or false
	TypePaths                       // a list of paths
)

// String is what the type is called in messages and docs.
func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeScalar:
		return "scalar"
	case TypePositiveInt:
		return "positive integer"
	case TypeDuration:
		return `duration ("20m") or seconds`
	case TypeNames:
		return "list of variable names"
	case TypeMapping:
		return "mapping"
	case TypeBool:
		return "boolean"
	case TypePaths:
		return "list of paths"
	}
	return "none"
}

// Check returns "" when v, a front-matter value as YAML decoded it, is of
// the type, else what is wrong ("must be a positive integer").
func (t Type) Check(v any) string {
	switch t {
	case TypeString:
		if _, ok := v.(string); ok {
			return ""
		}
		return "must be a string"
	case TypeScalar:
		switch v.(type) {
		case map[string]any, []any:
			return "must be a single value"
		}
		return ""
	case TypePositiveInt:
		if n, ok := v.(int); ok && n >= 1 {
			return ""
		}
		return "must be a positive integer"
	case TypeDuration:
		switch v := v.(type) {
		case int:
			if v >= 0 {
				return ""
			}
		case string:
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				return ""
			}
		}
		return `must be a duration like "20m" or "90s", or a number of seconds`
	case TypeNames:
		list, ok := v.([]any)
		if !ok {
			return "must be a list of environment variable names"
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok || !ValidEnvName(s) {
				return fmt.Sprintf("must be a list of environment variable names (%q is not one)", fmt.Sprint(e))
			}
		}
		return ""
	case TypeMapping:
		if _, ok := v.(map[string]any); ok {
			return ""
		}
		return "must be a mapping"
	case TypeBool:
		if _, ok := v.(bool); ok {
			return ""
		}
		return "must be true or false"
	case TypePaths:
		list, ok := v.([]any)
		if !ok {
			return "must be a list of strings"
		}
		for _, e := range list {
			if s, ok := e.(string); !ok || s == "" {
				return fmt.Sprintf("must be a list of paths (%q is not one)", fmt.Sprint(e))
			}
		}
		return ""
	}
	return "is not a setting"
}

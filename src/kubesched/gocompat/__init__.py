"""Where Go's libraries behave differently from Python's obvious equivalent, reproduced once.

kube-scheduler's messages, its encoded configuration and its scores are compared
byte for byte with what the Go binary produces, so every place where Go's
standard library (strconv, fmt, encoding/json, time, math) or apimachinery
(field errors, name validation) disagrees with Python lives here, shared by
every package instead of each keeping its own copy.

This is the lowest layer of kubesched: its modules import only the standard
library, numpy and each other, never another kubesched package, so api,
config, framework and plugins can all use them without importing one another
(tests/test_import_layers.py checks this). Modules, by the Go package they
stand for:

- strconv: `go_quote` (strconv.Quote, fmt's %q), `parse_int64` (strconv.ParseInt)
- fmt: `go_format_float_v` (fmt's %v of a float64)
- jsonenc: `go_json`, `go_float_literal` (encoding/json output), `innermost_open_bracket`
- duration: time.Duration's String and ParseDuration
- gomath: `go_round` (math.Round), `go_round_array`, `go_log` (math.Log, bit for bit)
- field: apimachinery's field.Error, field paths and error aggregation
- names: apimachinery's name validation (DNS-1123 labels and subdomains, qualified names)
"""

// The engine re-exports the codec types that appear in its API (URLs, heads, fields, errors).
@_exported import HaulHTTP
@_exported import HaulIO

// The engine re-exports the codec types that appear in its API (URLs, heads, fields, errors).
@_exported import HaulHTTP
@_exported import HaulIO
// The resume journal's error is part of Haul's API (`HaulError.journal`, `DownloadProgress.checkpointFailure`).
@_exported import HaulJournal

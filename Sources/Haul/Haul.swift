@_exported import HaulHTTP

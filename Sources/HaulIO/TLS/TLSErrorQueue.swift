import COpenSSL

/// Reads OpenSSL's thread-local error queue into messages. The queue must be drained after every failure, or a
/// stale entry is blamed for the next, unrelated error on the same (loop) thread.
enum TLSErrorQueue {
    /// Empties the queue, returning the reason strings, oldest first, without duplicates.
    static func drain() -> [String] {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            let reason: String
            if let text = ERR_reason_error_string(code) {
                reason = String(cString: text)
            } else {
                reason = "OpenSSL error \(String(code, radix: 16))"
            }
            if !reasons.contains(reason) { reasons.append(reason) }
        }
        return reasons
    }

    /// Empties the queue and returns whether any entry was an EOF without close_notify.
    static func drainReportingUnexpectedEOF() -> (unexpectedEOF: Bool, reasons: [String]) {
        let eof = haul_ERR_is_unexpected_eof(ERR_peek_error()) != 0
        return (eof, drain())
    }

    /// Discards anything left over, before starting an operation whose errors we want to read.
    static func clear() { ERR_clear_error() }
}

import Haul

/// Machine-readable progress (`--json`): one JSON object per line, each with a `"type"`.
///
/// ```
/// {"type":"progress","id":1,"url":"https://example.org/a.iso","file":"a.iso","phase":"downloading","bytes":452145152,"total":1073741824,"rate":124151398,"eta":5,"connections":8,"elapsed":42.000}
/// {"type":"done","id":1,"url":"https://example.org/a.iso","file":"a.iso","path":"/data/a.iso","bytes":1073741824,"seconds":9.120,"rate":117734630}
/// {"type":"error","id":2,"file":"a.iso","code":3,"class":"network","message":"connect to 10.0.0.1:443: Connection refused","transient":true,"url":"https://10.0.0.1/a.iso","attempts":5}
/// {"type":"done","id":3,"url":"http://h/b.iso","file":"b.iso","path":"b.iso","bytes":1000,"seconds":0.000,"rate":null,"skipped":true}
/// ```
///
/// - `id` is the download's number in the run (1 for the first URL or list entry, in the order given),
///   the same on every line about it, so that lines of concurrent downloads can be told apart even
///   before the file has its name; `url` is the URL it was asked for (user information shown as `***`).
///   An error line's `url` is where the failure happened (a mirror, a redirect target). Both are left out
///   of lines that concern no one download (a usage error), and by callers that do not give them.
/// - `bytes`, `total` are byte counts; `total` is null while unknown.
/// - `rate` is bytes per second, a whole number; `eta` whole seconds or null; `elapsed`, `seconds` decimals.
/// - `code` and `class` are the ``ExitStatus`` the failure maps to; `file` is null for an error about no
///   one file (a usage error).
/// - A download skipped because its file is already complete (`--skip-existing`, or a rerun of an input
///   file) is a `"done"` line with `"skipped":true` and the existing file's size.
/// - Lines carry no trailing newline; the caller writes one after each.
public enum JSONProgress {
    /// A `"progress"` line for a snapshot.
    public static func progressLine(file: String, progress: DownloadProgress, id: Int? = nil, url: String? = nil) -> String {
        var object = JSONObjectWriter()
        object.add("type", "progress")
        addIdentity(&object, id: id, url: url)
        object.add("file", file)
        object.add("phase", phaseName(progress.phase))
        object.add("bytes", progress.bytesDone)
        object.add("total", progress.total)
        object.add("rate", wholeRate(progress.bytesPerSecond))
        object.add("eta", progress.estimatedTimeRemaining.map(UnitFormatting.roundedSeconds))
        object.add("connections", progress.activeConnections)
        object.add("elapsed", UnitFormatting.seconds(progress.elapsed), fractionDigits: 3)
        return object.json
    }

    /// A `"done"` line: the file finished at `path` with `bytes` bytes in `duration`.
    public static func doneLine(file: String, path: String, bytes: Int64, duration: Duration, id: Int? = nil,
                                url: String? = nil) -> String {
        let seconds = UnitFormatting.seconds(duration)
        var object = JSONObjectWriter()
        object.add("type", "done")
        addIdentity(&object, id: id, url: url)
        object.add("file", file)
        object.add("path", path)
        object.add("bytes", bytes)
        object.add("seconds", seconds, fractionDigits: 3)
        object.add("rate", seconds > 0 ? wholeRate(Double(bytes) / seconds) : nil)
        return object.json
    }

    /// A `"done"` line for a download that was skipped: its destination `path` is already complete with `bytes` bytes.
    public static func skippedLine(file: String, path: String, bytes: Int64, id: Int? = nil, url: String? = nil) -> String {
        var object = JSONObjectWriter()
        object.add("type", "done")
        addIdentity(&object, id: id, url: url)
        object.add("file", file)
        object.add("path", path)
        object.add("bytes", bytes)
        object.add("seconds", 0, fractionDigits: 3)
        object.add("rate", nil as Int64?)
        object.add("skipped", true)
        return object.json
    }

    /// An `"error"` line for a failed download, classified by ``ExitStatus/init(classifying:)``; `message`
    /// replaces the error's own description (the CLI's wording, ``ErrorText/message(for:source:)``). An engine
    /// error adds `"url"` (the URL being fetched when it failed) and `"attempts"` (the tries of the request
    /// that failed).
    public static func errorLine(file: String?, error: any Error, message: String? = nil, id: Int? = nil) -> String {
        let haulError = error as? HaulError
        return errorLine(file: file, status: ExitStatus(classifying: error), message: message ?? String(describing: error),
                         transient: haulError?.isTransient ?? false, url: haulError?.url, attempts: haulError?.attempts, id: id)
    }

    /// An `"error"` line with an explicit status and message (for failures that are not Swift errors,
    /// like an interruption by a signal). `file` is null for errors that concern no one file (a usage error);
    /// `url` and `attempts` are left out when nil.
    public static func errorLine(file: String?, status: ExitStatus, message: String, transient: Bool = false,
                                 url: String? = nil, attempts: Int? = nil, id: Int? = nil) -> String {
        var object = JSONObjectWriter()
        object.add("type", "error")
        if let id { object.add("id", id) }
        object.add("file", file)
        object.add("code", Int(status.code))
        object.add("class", status.className)
        object.add("message", message)
        object.add("transient", transient)
        if let url { object.add("url", url) }
        if let attempts { object.add("attempts", attempts) }
        return object.json
    }

    /// `"id"` and `"url"` right after `"type"`, each when given.
    private static func addIdentity(_ object: inout JSONObjectWriter, id: Int?, url: String?) {
        if let id { object.add("id", id) }
        if let url { object.add("url", url) }
    }

    /// The phase as it appears in `"phase"`.
    public static func phaseName(_ phase: DownloadProgress.Phase) -> String {
        switch phase {
        case .connecting: "connecting"
        case .downloading: "downloading"
        case .finishing: "finishing"
        case .paused: "paused"
        case .completed: "completed"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }

    static func wholeRate(_ bytesPerSecond: Double) -> Int64 {
        guard bytesPerSecond.isFinite, bytesPerSecond > 0 else { return 0 }
        return bytesPerSecond >= 9.2e18 ? Int64.max : Int64(bytesPerSecond.rounded())
    }
}

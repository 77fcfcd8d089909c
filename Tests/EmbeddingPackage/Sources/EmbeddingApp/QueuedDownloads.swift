import Haul
import HaulSessions

/// Downloads handed to a background session, whose failures the app matches as it matches a direct
/// download's: one error type (`SessionError`), a 404 by its status, a cancel, a `HaulError.Reason`.
public final class QueuedDownloads: Sendable {
    let session: HaulSession

    public init(identifier: String) async throws(SessionError) {
        session = try await HaulSession.connect(identifier)
    }

    public func download(_ url: String, to path: String) async -> String {
        do {
            let task = try await session.add(DownloadRequest(url: url, destination: .file(path)))
            let result = try await task.value
            return "saved \(result.path) (\(result.bytes) bytes, \(result.digest))"
        } catch where error.httpStatus == 404 {
            return "no such file at \(url)"
        } catch where error.isCancelled {
            return "cancelled"
        } catch where error.haulError?.reason == .outputClosed {
            return "closed"
        } catch {
            switch error {
            case .taskFailed(let failure):
                let engineError: HaulError = failure.error
                return "\(failure.failureClass.rawValue) (exit \(failure.exitCode)): \(engineError)"
            default:
                return "session: \(error)"
            }
        }
    }
}

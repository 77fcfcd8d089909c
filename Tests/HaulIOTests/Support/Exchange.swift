import HaulHTTP
import HaulIO

extension HTTPClient {
    /// Runs one exchange the way the engine does — ``HTTPClient/executeOnLoop(_:handler:completion:)`` on the
    /// loop thread — and awaits its completion, for tests written as async code.
    func exchange(_ request: RequestHead, handler: any ResponseHandler) async throws(HTTPClientError) -> ExchangeSummary {
        let result: Result<ExchangeSummary, HTTPClientError> = await withCheckedContinuation { continuation in
            loop.execute { self.executeOnLoop(request, handler: handler) { continuation.resume(returning: $0) } }
        }
        return try result.get()
    }
}

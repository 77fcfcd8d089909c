/// `-u USER[:PASSWORD]`, as curl reads it: the password is what follows the first colon (it may hold
/// colons itself, and may be empty: `-u alice:` sends an empty one on purpose).
///
/// Without a colon curl asks for the password on the terminal. Sending an empty one instead, as haul
/// once did, fails with a 401 that says nothing about the cause; so haul asks too, and where nobody can
/// answer (no terminal) refuses with a usage error that says how to give it.
public enum UserOption {
    public enum Reading: Sendable, Hashable {
        case complete(user: String, password: String)
        /// `-u alice`: the password is to be asked for.
        case needsPassword(user: String)
    }

    public static func read(_ text: String) -> Reading {
        guard let colon = text.firstIndex(of: ":") else { return .needsPassword(user: text) }
        return .complete(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }

    /// The prompt, curl's words: on stderr, the answer read from the terminal without echo.
    public static func prompt(user: String) -> String {
        "Enter host password for user '\(user)':"
    }

    /// The error when the password is missing and stdin is no terminal to ask on.
    public static func missingPassword(user: String) -> UsageError {
        UsageError("-u \(user) gives no password and there is no terminal to ask for it: use -u \(user):PASSWORD, or --netrc")
    }
}

import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

/// Asks for `-u USER`'s password on the terminal with echo off (``UserOption``).
enum PasswordPrompt {
    /// `user` as given when it has a password (or none was given); else `user:PASSWORD` with the password
    /// read from the terminal on stdin, or a usage error when stdin is not one.
    static func completed(_ user: String?) throws(UsageError) -> String? {
        guard let user, case .needsPassword(let name) = UserOption.read(user) else { return user }
        guard isatty(STDIN_FILENO) == 1, let password = read(prompt: UserOption.prompt(user: name)) else {
            throw UserOption.missingPassword(user: name)
        }
        return name + ":" + password
    }

    /// One line from the terminal on stdin, not echoed; the terminal's settings are put back after.
    private static func read(prompt: String) -> String? {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return nil }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)  // the newline typed still ends the prompt's line
        StandardError.write(prompt + " ")
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0 else { return nil }
        defer { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(STDIN_FILENO, &byte, 1) == 1, byte != UInt8(ascii: "\n") {
            line.append(byte)
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
    }
}

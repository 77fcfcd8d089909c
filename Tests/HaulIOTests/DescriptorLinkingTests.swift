import Glibc
import Synchronization
import SystemPackage
import Testing
@testable import HaulIO

/// Naming an open file without a name: `linkat(AT_EMPTY_PATH)` first, `/proc/self/fd/N` where the kernel
/// refuses that, the refusal remembered only when `/proc` then works.
@Suite struct DescriptorLinkingTests {
    /// The calls a ``DescriptorLinking`` made, in order: "empty" or "proc".
    final class Calls: Sendable {
        let made = Mutex<[String]>([])
        func record(_ call: String) { made.withLock { $0.append(call) } }
        var all: [String] { made.withLock { $0 } }
    }

    func write(_ text: String, into file: OutputFile) throws {
        try Array(text.utf8).withUnsafeBytes { try file.write($0, at: 0) }
    }

    @Test func theEmptyPathWayIsTriedFirstAndAloneWhenItWorks() throws {
        let linking = DescriptorLinking()
        let calls = Calls()
        try linking.link(7, to: "/d/x",
                         byEmptyPath: { descriptor, path throws(SystemError) in
                             #expect(descriptor == 7 && path == "/d/x")
                             calls.record("empty")
                         },
                         throughProc: { _, _ throws(SystemError) in calls.record("proc") })
        #expect(calls.all == ["empty"])
        #expect(!linking.linksThroughProcOnly)
    }

    @Test(arguments: [ENOENT, EINVAL, EPERM])
    func aRefusalFallsBackToProcOnceAndIsRemembered(refusal: Int32) throws {
        let linking = DescriptorLinking()
        let calls = Calls()
        let byEmptyPath = { (_: Int32, _: String) throws(SystemError) in
            calls.record("empty")
            throw SystemError(call: "linkat", errno: refusal)
        }
        let throughProc = { (_: Int32, _: String) throws(SystemError) in calls.record("proc") }
        try linking.link(3, to: "/d/x", byEmptyPath: byEmptyPath, throughProc: throughProc)
        #expect(calls.all == ["empty", "proc"])
        #expect(linking.linksThroughProcOnly)
        // Every later file goes through /proc at once: one failed call per process, not one per file.
        try linking.link(4, to: "/d/y", byEmptyPath: byEmptyPath, throughProc: throughProc)
        try linking.link(5, to: "/d/z", byEmptyPath: byEmptyPath, throughProc: throughProc)
        #expect(calls.all == ["empty", "proc", "proc", "proc"])
    }

    @Test func aMissingDirectoryIsThrownAndNotTakenForARefusal() throws {
        let linking = DescriptorLinking()
        let calls = Calls()
        let error = #expect(throws: SystemError.self) {
            try linking.link(3, to: "/gone/x",
                             byEmptyPath: { _, _ throws(SystemError) in
                                 calls.record("empty")
                                 throw SystemError(call: "linkat", errno: ENOENT)
                             },
                             throughProc: { _, _ throws(SystemError) in
                                 calls.record("proc")
                                 throw SystemError(call: "linkat", errno: ENOTDIR)
                             })
        }
        // The /proc call's error is the one reported: it says what is wrong with the path.
        #expect(error?.errno == ENOTDIR)
        #expect(calls.all == ["empty", "proc"])
        #expect(!linking.linksThroughProcOnly, "the next file tries AT_EMPTY_PATH again")
    }

    @Test(arguments: [EEXIST, ENOSPC, EACCES, EROFS, EMLINK])
    func otherFailuresAreThrownWithoutTryingProc(failure: Int32) throws {
        let linking = DescriptorLinking()
        let calls = Calls()
        #expect(throws: SystemError(call: "linkat", errno: failure)) {
            try linking.link(3, to: "/d/x",
                             byEmptyPath: { _, _ throws(SystemError) in
                                 calls.record("empty")
                                 throw SystemError(call: "linkat", errno: failure)
                             },
                             throughProc: { _, _ throws(SystemError) in calls.record("proc") })
        }
        #expect(calls.all == ["empty"])
        #expect(!linking.linksThroughProcOnly)
    }

    /// A real file, its `AT_EMPTY_PATH` call made to fail as an old kernel's would: the real `/proc` call names it.
    @Test func aRealFileIsNamedThroughProcWhenTheEmptyPathWayIsRefused() throws {
        let scratch = OutputFileScratch()
        let linking = DescriptorLinking()
        let calls = Calls()
        let byEmptyPath = { (_: Int32, _: String) throws(SystemError) in
            calls.record("empty")
            throw SystemError(call: "linkat", errno: ENOENT)
        }
        let throughProc = { (descriptor: Int32, path: String) throws(SystemError) in
            calls.record("proc")
            try FileDescriptor.linkThroughProc(descriptor, path)
        }
        for name in ["a", "b"] {
            let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("\(name).part")))
            try write("content of \(name)", into: file)
            try linking.link(file.fileDescriptor.rawValue, to: scratch.file(name), byEmptyPath: byEmptyPath, throughProc: throughProc)
        }
        #expect(calls.all == ["empty", "proc", "proc"])
        #expect(UnnamedOutputFileTests.entries(scratch.path) == ["a", "b"])
        #expect(scratch.read("a") == "content of a")
        #expect(scratch.read("b") == "content of b")
    }

    /// Both real ways name a real file, never replace, and never follow a symbolic link at the new name.
    @Test(arguments: [false, true])
    func bothWaysNeverReplaceNorFollowALinkAtTheName(throughProcOnly: Bool) throws {
        let scratch = OutputFileScratch()
        let linking = DescriptorLinking(emptyPathRefused: throughProcOnly)
        scratch.write("taken", "someone else's")
        scratch.symlink("dangling", to: scratch.file("target"))
        let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("x.part")))
        try write("mine", into: file)
        #expect(throws: SystemError(call: "linkat", errno: EEXIST)) { try file.fileDescriptor.link(to: scratch.file("taken"), with: linking) }
        #expect(throws: SystemError(call: "linkat", errno: EEXIST)) { try file.fileDescriptor.link(to: scratch.file("dangling"), with: linking) }
        #expect(!scratch.exists("target"), "the link's target was not created")
        #expect(scratch.read("taken") == "someone else's")
        try file.fileDescriptor.link(to: scratch.file("x"), with: linking)
        #expect(scratch.read("x") == "mine")
        #expect(UnnamedOutputFileTests.entries(scratch.path) == ["dangling", "taken", "x"])
        #expect(linking.linksThroughProcOnly == throughProcOnly)
    }

    /// Linux 6.10 and later let the opener link its own file by descriptor without privilege; root may anywhere.
    @Test func theKernelAllowsTheEmptyPathWayWhereItShould() throws {
        let release = try #require(kernelRelease())
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        let allowed = geteuid() == 0 || (numbers.count == 2 && (numbers[0], numbers[1]) >= (6, 10))
        let scratch = OutputFileScratch()
        let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("x.part")))
        try write("by descriptor", into: file)
        print("kernel \(release), euid \(geteuid()): AT_EMPTY_PATH expected \(allowed ? "allowed" : "refused")")
        if allowed {
            try FileDescriptor.linkByEmptyPath(file.fileDescriptor.rawValue, scratch.file("x"))
            #expect(scratch.read("x") == "by descriptor")
        } else {
            #expect(throws: SystemError(call: "linkat", errno: ENOENT)) {
                try FileDescriptor.linkByEmptyPath(file.fileDescriptor.rawValue, scratch.file("x"))
            }
        }
    }
}

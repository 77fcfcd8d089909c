import HaulTestSupport
import Testing

@Suite("LoopbackPorts")
struct LoopbackPortsTests {
    /// Ports chosen one by one and released at once can repeat; a server handed two equal ports refuses to start
    /// ("a duplicate listen"), which once failed CI.
    @Test("ports asked for together are all different")
    func portsAskedForTogetherAreDifferent() throws {
        for _ in 0..<20 {
            let ports = try LoopbackPorts.freePorts(64)
            #expect(Set(ports).count == ports.count, "repeated ports in \(ports.sorted())")
            #expect(!ports.contains(0))
        }
    }
}

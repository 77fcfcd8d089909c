import Testing
@testable import HaulTestSupport

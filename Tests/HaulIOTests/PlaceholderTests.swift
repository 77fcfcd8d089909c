import Testing
@testable import HaulIO

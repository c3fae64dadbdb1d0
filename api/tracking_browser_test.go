package api_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
)

// The browser test's settings. make test sets EnvChromium (and .ci/run
// installs Debian's chromium when it is missing); without it the test is
// skipped, as the Postgres tests are without their URL.
const (
	// envChromium is the Chromium (or Chrome) binary to drive.
	envChromium = "MEMOCART_TEST_CHROMIUM"
	// envScreenshots keeps the screenshots in this directory; unset, they
	// go to a temporary directory removed after the test. Never inside the
	// repository.
	envScreenshots = "MEMOCART_TEST_SCREENSHOTS"
)

// cspRecorder runs in every page before the page's own scripts: it records
// each Content-Security-Policy violation, which the page must have none of.
const cspRecorder = `window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});`

// pageFacts is what the test reads from the rendered page.
type pageFacts struct {
	Status   string  `json:"status"`
	StatusBG string  `json:"statusBG"`
	BodyBG   string  `json:"bodyBG"`
	Heading  string  `json:"heading"`
	QRWidth  float64 `json:"qrWidth"`
	// RefundBGs are the background colours of the refunds' status badges.
	RefundBGs []string `json:"refundBGs"`
	// Explorer are the targets of the links to refunds' transactions.
	Explorer   []string `json:"explorer"`
	TimeLeft   string   `json:"timeLeft"`
	Overflow   bool     `json:"overflow"`
	Violations []string `json:"violations"`
	Text       string   `json:"text"`
}

const readFacts = `(() => {
  const q = (s) => document.querySelector(s);
  const st = q("#status"), qr = q("svg.qr"), left = q("#time-left"), h1 = q("h1");
  return {
    status: st ? st.textContent : "",
    statusBG: st ? getComputedStyle(st).backgroundColor : "",
    bodyBG: getComputedStyle(document.body).backgroundColor,
    heading: h1 ? h1.textContent : "",
    qrWidth: qr ? qr.getBoundingClientRect().width : 0,
    refundBGs: [...document.querySelectorAll(".refund-status")].map((e) => getComputedStyle(e).backgroundColor),
    explorer: [...document.querySelectorAll("a.explorer-link")].map((a) => a.href),
    timeLeft: left ? left.textContent : "",
    overflow: document.documentElement.scrollWidth > window.innerWidth,
    violations: window.__csp || [],
    text: document.body.innerText,
  };
})()`

// browser starts one headless Chromium for the test and returns a function
// opening a tab in it, ready to record policy violations.
func browser(t *testing.T) func(t *testing.T, opts ...chromedp.Action[chromedp.Void]) context.Context {
	t.Helper()
	bin := os.Getenv(envChromium)
	if bin == "" {
		t.Skipf("%s is not set (make test sets it; Debian: apt-get install chromium)", envChromium)
	}
	path, err := exec.LookPath(bin)
	require.NoErrorf(t, err, "%s=%s: no such browser (Debian: apt-get install chromium)", envChromium, bin)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1000, 900),
	)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	// The first Run starts the browser, and must not carry a timeout.
	require.NoError(t, chromedp.Do(browserCtx), "starting %s", path)

	return func(t *testing.T, opts ...chromedp.Action[chromedp.Void]) context.Context {
		t.Helper()
		tab, cancelTab := chromedp.NewContext(browserCtx)
		t.Cleanup(cancelTab)
		_, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspRecorder})
		require.NoError(t, err)
		require.NoError(t, chromedp.Do(tab, opts...))
		ctx, cancel := context.WithTimeout(tab, time.Minute)
		t.Cleanup(cancel)
		return ctx
	}
}

// screenshotDir is where the screenshots go.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// visit opens url in tab, saves a full-page screenshot as name.png in dir
// and returns what the page shows.
func visit(t *testing.T, tab context.Context, url, dir, name string) pageFacts {
	t.Helper()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("h1"))))
	facts, err := chromedp.Run(tab, chromedp.Evaluate[pageFacts](readFacts))
	require.NoError(t, err)
	shot, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644))
	_, err = png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "the screenshot is a PNG")
	return facts
}

var countdownRE = regexp.MustCompile(`^\d+ min \d\d s$`)

// serverTimeLeftRE is the time left as the server writes it (timeLeft).
var serverTimeLeftRE = regexp.MustCompile(`^(\d+ h )?\d+ min$|^\d+ h$`)

// TestTrackingPageInBrowser renders every state of the tracking page in
// headless Chromium: the page's own style and script run under its policy
// and nothing is blocked, the label is the human one, the layout fits a
// phone, the countdown runs (and the page reads right without scripts),
// the QR code, photographed off the screen, scans to the payment link, and
// a sent refund links to its transaction on the explorer.
func TestTrackingPageInBrowser(t *testing.T) {
	newTab := browser(t)
	dir := screenshotDir(t)
	t.Logf("screenshots in %s", dir)

	clock := newFakeClock()
	cases := trackingCases(t, clock.Now())
	// A budget of one per address for the 429 page, set apart from the rest.
	e := newTrackingCasesEnv(t, clock, api.Config{PublicRateLimit: 1000}, cases)
	limited := newTrackingEnv(t, clock, api.Config{PublicRateLimit: 1}, cases[0].order)

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTab(t)
			facts := visit(t, tab, e.ts.URL+"/track/"+tc.order.Number, dir, fmt.Sprintf("%02d-%s", i+1, slug(tc.name)))
			assert.Empty(t, facts.Violations, "no Content-Security-Policy violation")
			assert.Equal(t, tc.label, facts.Status)
			assert.NotEqual(t, "rgba(0, 0, 0, 0)", facts.StatusBG, "the label is styled: the nonce'd style applied")
			assert.Equal(t, "rgb(244, 245, 247)", facts.BodyBG, "the page's background")
			for _, s := range tc.shows {
				if serverTimeLeftRE.MatchString(s) {
					// The inline script replaces the server's rounded time
					// left with a ticking count ("19 min 59 s" a second
					// later), checked against countdownRE below; the
					// handler tests check the server's text.
					continue
				}
				assert.Containsf(t, facts.Text, s, "the page reads %q", s)
			}
			for _, s := range trackingSecrets {
				assert.Falsef(t, showsSecret(facts.Text, s), "the page shows %q", s)
			}
			// Each refund's badge is styled, and a refund sent on a
			// public network links to its transaction, a plain link the
			// policy lets through.
			assert.Len(t, facts.RefundBGs, len(tc.refunds), "one badge per refund")
			for _, bg := range facts.RefundBGs {
				assert.NotEqual(t, "rgba(0, 0, 0, 0)", bg, "the refund's badge is styled")
			}
			if tc.explorer == "" {
				assert.Empty(t, facts.Explorer, "no explorer link")
			} else {
				assert.Equal(t, []string{tc.explorer}, facts.Explorer, "the sent refund's transaction on the explorer")
			}
			if tc.qr == "" {
				assert.Zero(t, facts.QRWidth, "no QR code")
				return
			}
			assert.InDelta(t, 240, facts.QRWidth, 1, "the QR code is drawn 240 px wide")
			assert.Regexp(t, countdownRE, facts.TimeLeft, "the inline script counts down")

			// Photograph the code as a phone would see it on the screen.
			shot, err := chromedp.Run(tab, chromedp.ScreenshotScale(chromedp.CSS("svg.qr"), 2))
			require.NoError(t, err)
			img, err := png.Decode(bytes.NewReader(shot))
			require.NoError(t, err)
			assert.Equal(t, tc.qr, decodeQRImage(t, img), "the QR code on the screen scans to the payment link")
		})
	}

	t.Run("waiting for payment on a phone", func(t *testing.T) {
		tab := newTab(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		facts := visit(t, tab, e.ts.URL+"/track/"+cases[0].order.Number, dir, "phone-created")
		assert.False(t, facts.Overflow, "nothing wider than the screen (the address wraps)")
		assert.Empty(t, facts.Violations)
	})

	t.Run("a sent refund on a phone", func(t *testing.T) {
		i := slices.IndexFunc(cases, func(c trackingCase) bool { return c.name == "refund sent on the public network" })
		require.GreaterOrEqual(t, i, 0)
		tab := newTab(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		facts := visit(t, tab, e.ts.URL+"/track/"+cases[i].order.Number, dir, "phone-refund-sent")
		assert.False(t, facts.Overflow, "nothing wider than the screen (the transaction hash wraps)")
		assert.Empty(t, facts.Violations)
		assert.Equal(t, []string{cases[i].explorer}, facts.Explorer)
	})

	t.Run("waiting for payment without scripts", func(t *testing.T) {
		tab := newTab(t, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}))
		facts := visit(t, tab, e.ts.URL+"/track/"+cases[0].order.Number, dir, "noscript-created")
		assert.Equal(t, "20 min", facts.TimeLeft, "the server's time left stands")
		assert.Equal(t, cases[0].label, facts.Status)
		assert.InDelta(t, 240, facts.QRWidth, 1, "the QR code needs no script")
	})

	t.Run("not found", func(t *testing.T) {
		tab := newTab(t)
		facts := visit(t, tab, e.ts.URL+"/track/"+otherOrderNumber(t, cases[0].order.Number), dir, "not-found")
		assert.Equal(t, "No order with this number", facts.Heading)
		assert.Equal(t, "rgb(244, 245, 247)", facts.BodyBG, "the same look")
		assert.Empty(t, facts.Violations)
		facts = visit(t, tab, e.ts.URL+"/track/12-34", dir, "malformed")
		assert.Equal(t, "That is not an order number", facts.Heading)
	})

	t.Run("too many requests", func(t *testing.T) {
		tab := newTab(t)
		url := limited.ts.URL + "/track/" + cases[0].order.Number
		visit(t, tab, url, dir, "limited-first")
		facts := visit(t, tab, url, dir, "too-many-requests")
		assert.Equal(t, "Too many requests", facts.Heading)
		assert.Contains(t, facts.Text, "Wait 60 seconds")
		assert.Equal(t, "rgb(244, 245, 247)", facts.BodyBG, "the same look")
		assert.Empty(t, facts.Violations)
	})

	t.Run("the policy is enforced", func(t *testing.T) {
		// A control for the checks above: a style without the nonce is
		// blocked and recorded, so an empty record means something.
		tab := newTab(t)
		visit(t, tab, e.ts.URL+"/track/"+cases[0].order.Number, dir, "control")
		facts, err := chromedp.Run(tab, chromedp.Evaluate[pageFacts](`(() => {
  const s = document.createElement("style");
  s.textContent = "body{background:rgb(255,0,0)}";
  document.head.appendChild(s);
  return new Promise((r) => setTimeout(() => r(`+readFacts+`), 100));
})()`, chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		assert.NotEmpty(t, facts.Violations, "an injected style is reported")
		assert.Equal(t, "rgb(244, 245, 247)", facts.BodyBG, "and blocked")
	})
}

func slug(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
}

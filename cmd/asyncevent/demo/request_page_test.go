package demo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRequestPageWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, page    string
		heading, line string
	}{
		{
			name: "a held seat",
			page: `<title>A seat · Your request</title><body class="state-held"><main><h1 id="heading">A seat is held for you</h1>
<div class="lines" id="lines">
  <p class="live" id="live" role="status" aria-live="polite">Pay by 12:00:10: 10 seconds left.</p>
  <p>If you do not pay in time, the seat goes to the next person waiting.</p>
</div><p class="meta" id="request-id">Request: r-1</p>`,
			heading: "A seat is held for you", line: "Pay by 12:00:10: 10 seconds left.",
		},
		{
			name: "entities, inner tags, a script and a paragraph before the lines",
			page: `<script src="/request-page/page.js" defer></script><p>before</p><H1 class="x">Sold out: you&#39;re
  on the <em>waitlist</em></H1><div id="lines"><p>3 &amp; more ahead of you.</p></div>`,
			heading: "Sold out: you're on the waitlist", line: "3 & more ahead of you.",
		},
		{
			name: "the live region before the lines",
			page: `<main id="request" data-state="held"><h1 id="heading" tabindex="-1">A seat is held for you</h1>
<p class="live" id="live" role="status" aria-live="polite" aria-atomic="true">Pay by 12:00:10 UTC.</p>
<div id="body"><p class="countdown" id="countdown" role="timer" data-ms="10000">10 s left</p>
<div class="lines" id="lines"><p>If you do not pay in time, the seat goes to the next person waiting.</p></div>`,
			heading: "A seat is held for you", line: "Pay by 12:00:10 UTC. 10 s left",
		},
		{
			name:    "a countdown alone",
			page:    `<h1>The order is drawn</h1><p id="live" class="live"> </p><p class="countdown" id="countdown">Sales start in 2 min.</p>`,
			heading: "The order is drawn", line: "Sales start in 2 min.",
		},
		{
			name: "an empty live region: the first of the lines",
			page: `<h1 id="heading">Sold out</h1><p class="live" id="live" role="status"></p>
<div class="lines" id="lines"><p>Every seat was taken before your turn.</p></div>`,
			heading: "Sold out", line: "Every seat was taken before your turn.",
		},
		{name: "no lines", page: `<h1>Not found</h1><p>Nothing here.</p>`, heading: "Not found"},
		{name: "not a page", page: `plain text`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heading, line := pageWords(tc.page)
			assert.Equal(t, tc.heading, heading)
			assert.Equal(t, tc.line, line)
		})
	}
}

func TestSavedPagePath(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "/tmp/out/demo-request-page.html", savedPagePath("/tmp/out/demo.html"))
	assert.Equal(t, "report-request-page.html", savedPagePath("report"))
	assert.Equal(t, "a.b/r-request-page.html", savedPagePath("a.b/r.htm"))
}

// A saved page keeps its words and style and leaves out what needs the service.
func TestStandalonePage(t *testing.T) {
	served := "<head>\n<noscript><meta http-equiv=\"refresh\" content=\"10;url=/requests/r/page\"></noscript>\n<style nonce=\"n\">h1{}</style>\n" +
		"<script nonce=\"n\" src=\"/request-page/page.js?v=1\" defer></script>\n</head><body><main><h1 id=\"heading\">A seat is held for you</h1>\n" +
		"<p class=\"meta\" id=\"updates\"><span id=\"refresh\">This page updates itself.</span> <a id=\"pause\" href=\"/requests/r/page?pause=1\">Pause updates</a></p>\n" +
		"<div class=\"actions\" id=\"actions\">\n  <a id=\"pay\" href=\"https://shop.example/pay/r\">Pay now</a>\n  <form method=\"post\" action=\"/requests/r/page/release\">\n" +
		"    <input type=\"hidden\" name=\"token\" value=\"secret\">\n    <button type=\"submit\" id=\"release\">Give up the seat</button>\n  </form>\n</div></main></body>"
	saved := standalone(served)
	for _, gone := range []string{"refresh", "<script", "<form", "secret", "Pause updates"} {
		assert.NotContains(t, saved, gone)
	}
	for _, kept := range []string{"<style nonce=\"n\">h1{}</style>", "A seat is held for you", `<a id="pay" href="https://shop.example/pay/r">Pay now</a>`} {
		assert.Contains(t, saved, kept)
	}
}

package demo

import (
	"context"
	"crypto/rand"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/httpapi"
)

// requestPageReport is the page the user of one request of the sale with holds saw
// while the request was HELD: httpapi's request page (GET /requests/{requestId}/page),
// in English, in the user's words rather than the report's.
type requestPageReport struct {
	RequestID string            `json:"requestId"`
	UserID    string            `json:"userId"`
	Status    asyncevent.Status `json:"status"`  // when the page was rendered
	Heading   string            `json:"heading"` // the page's <h1>
	Line      string            `json:"line"`    // its main line, with the time left (pageWords)
	// File is where -report saved the page, beside the HTML report.
	File string `json:"file,omitempty"`

	page []byte
}

// payURL is the shop's payment page a held seat's page links to. It is only a link
// in the page: the demo never fetches it.
const payURL = "https://shop.example/pay/{requestId}"

// renderRequestPage renders req's page as its user gets it, through httpapi's
// handler in-process: what a user sees is the service's page, not the demo's idea of
// it, and the demo opens no port for it.
func (d *demo) renderRequestPage(ctx context.Context, req asyncevent.Request) (*requestPageReport, error) {
	secret := make([]byte, httpapi.MinSecretBytes)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	auth, err := httpapi.NewJWTAuthenticator(secret, httpapi.JWTOptions{})
	if err != nil {
		return nil, err
	}
	// The server's clock is the demo's, whose writes decide when a hold runs out.
	srv, err := httpapi.NewServer(httpapi.ServerOptions{Client: d.admin, Authenticator: auth, Clock: d.clock.now})
	if err != nil {
		return nil, err
	}
	if err := srv.MountRequestPage(httpapi.RequestPageOptions{ConfirmURL: payURL}); err != nil {
		return nil, err
	}
	token, err := auth.Mint(req.UserID, httpapi.RoleUser, time.Now().Add(time.Hour))
	if err != nil {
		return nil, err
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/requests/"+url.PathEscape(req.RequestID)+"/page", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Accept-Language", "en")
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		return nil, fmt.Errorf("the request page of %s answered %d", req.RequestID, w.Code)
	}
	heading, line := pageWords(w.Body.String())
	if heading == "" {
		return nil, fmt.Errorf("the request page of %s has no heading", req.RequestID)
	}
	return &requestPageReport{RequestID: req.RequestID, UserID: req.UserID, Status: req.Status,
		Heading: heading, Line: line, page: w.Body.Bytes()}, nil
}

var (
	headingElement     = regexp.MustCompile(`(?is)<h1\b[^>]*>(.*?)</h1>`)
	liveParagraph      = regexp.MustCompile(`(?is)<p\b[^>]*\bid="live"[^>]*>(.*?)</p>`)
	countdownParagraph = regexp.MustCompile(`(?is)<p\b[^>]*\bid="countdown"[^>]*>(.*?)</p>`)
	paragraphElement   = regexp.MustCompile(`(?is)<p\b[^>]*>(.*?)</p>`)
	anyTag             = regexp.MustCompile(`(?s)<[^>]*>`)
)

// pageWords returns the text of a request page's heading (its <h1>) and of its main
// line: the sentence of its live region (#live), which a screen reader is told, and
// the time left as the page showed it (#countdown); else the first paragraph of
// #lines; "" for what the page lacks. The page is httpapi's own markup, so a few
// patterns read it; they survive added attributes, scripts and elements.
func pageWords(page string) (heading, line string) {
	if m := headingElement.FindStringSubmatch(page); m != nil {
		heading = textOf(m[1])
	}
	var parts []string
	for _, p := range []*regexp.Regexp{liveParagraph, countdownParagraph} {
		if m := p.FindStringSubmatch(page); m != nil && textOf(m[1]) != "" {
			parts = append(parts, textOf(m[1]))
		}
	}
	if i := strings.Index(page, `id="lines"`); len(parts) == 0 && i >= 0 {
		if m := paragraphElement.FindStringSubmatch(page[i:]); m != nil {
			parts = append(parts, textOf(m[1]))
		}
	}
	return heading, strings.Join(parts, " ")
}

// textOf is the text of an HTML fragment, its spaces collapsed.
func textOf(fragment string) string {
	return strings.Join(strings.Fields(html.UnescapeString(anyTag.ReplaceAllString(fragment, ""))), " ")
}

// savedPagePath is where -report saves the request page: beside the report, named
// after it.
func savedPagePath(reportPath string) string {
	return strings.TrimSuffix(reportPath, filepath.Ext(reportPath)) + "-request-page.html"
}

// save writes the page beside the HTML report at reportPath: the page as served, but
// for what needs the service (its refresh, its script, the Release form and its
// token, which would lead nowhere from a file); its inline style reads without it.
func (p *requestPageReport) save(reportPath string) error {
	p.File = savedPagePath(reportPath)
	return os.WriteFile(p.File, []byte(standalone(string(p.page))), 0o644)
}

// The parts of a served page that a saved copy leaves out.
var (
	noscriptElement = regexp.MustCompile(`(?s)<noscript>.*?</noscript>\n?`)
	scriptElement   = regexp.MustCompile(`(?s)<script[^>]*>.*?</script>\n?`)
	formElement     = regexp.MustCompile(`(?s)\s*<form[^>]*>.*?</form>`)
	pauseParagraph  = regexp.MustCompile(`(?s)<p class="meta" id="updates">.*?</p>\n?`)
)

// standalone is a served page without what needs the service.
func standalone(page string) string {
	for _, re := range []*regexp.Regexp{noscriptElement, scriptElement, formElement, pauseParagraph} {
		page = re.ReplaceAllString(page, "")
	}
	return page
}

// rows are the page's part of the text report.
func (p *requestPageReport) rows() []row {
	saved := "not saved: -report FILE.html saves it beside the report, as FILE-request-page.html"
	if p.File != "" {
		saved = "beside the HTML report, as " + p.File
	}
	return []row{
		{"heading", p.Heading},
		{"main line", p.Line},
		{"page", saved},
	}
}

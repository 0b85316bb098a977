// Package dashboard serves the hub's web page: devices with their tools and
// IoT things, calls from a form built from each tool's inputSchema, pending
// activations, call history, the agent's chat and the live event stream, in
// English and Simplified Chinese. It is one static page; every piece of
// data comes from the REST API. A person signs in with their name and
// password (the session is an HttpOnly cookie; every other request carries
// the X-XZH-CSRF header) and sees their homes: the home switcher, members
// and roles, adding a device by its code, their personal tokens; the admin
// may instead paste the admin token, kept in the browser's local storage,
// and sees every user, home and device.
//
// The page is written as seven files (index.html, style.css, i18n.js,
// app.js, people.js, services.js, assistant.js: the live settings, and
// the persona and memory of a device and of a home) and served as one document, the style and scripts inlined, so
// nothing is fetched but the API and nothing is downloaded from elsewhere.
package dashboard

import (
	_ "embed"
	"net/http"
	"strings"
)

var (
	//go:embed index.html
	shell string
	//go:embed style.css
	style string
	//go:embed i18n.js
	i18n string
	//go:embed app.js
	app string
	//go:embed people.js
	people string
	//go:embed assistant.js
	assistant string
	//go:embed services.js
	servicesJS string
	//go:embed device.html
	device []byte
	//go:embed consent.html
	consent []byte
)

// page is the document served: the shell with its style and scripts in place.
var page = []byte(strings.NewReplacer(
	"/*STYLE*/", style,
	"/*I18N*/", i18n,
	"/*APP*/", app,
	"/*PEOPLE*/", people,
	"/*ASSISTANT*/", assistant,
	"/*SERVICES*/", servicesJS,
).Replace(shell))

// Handler serves the page. It needs no token: it holds no data.
func Handler() http.Handler { return serve(page) }

// DeviceHandler serves the browser test device (/device): a page that is
// a xiaozhi device itself, with two MCP tools of its own and, where the
// browser allows (https or localhost, WebCodecs Opus), microphone and
// speaker. It approves itself with the admin token a person enters.
func DeviceHandler() http.Handler { return serve(device) }

// ConsentHandler serves the page an MCP client's OAuth authorization
// lands on (/oauth/consent#<request>): who asks, and Allow / Deny with the
// admin token; it follows a decision made in the dashboard by itself.
func ConsentHandler() http.Handler { return serve(consent) }

func serve(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// img-src data: is for the favicon, an inline SVG.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'")
		w.Write(doc)
	})
}

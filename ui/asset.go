package ui

// Asset returns an embedded static file as the pages link it, by its name
// under /static/ ("app.css", "app.js"), so that an export can store it
// beside the pages.
func (u *UI) Asset(name string) (body []byte, contentType string, ok bool) {
	a, ok := u.assets[name]
	if !ok {
		return nil, "", false
	}
	return a.body, a.contentType, true
}

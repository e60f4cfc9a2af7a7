package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"

	"github.com/labstack/echo/v4"
)

//go:embed static
var staticFiles embed.FS

// asset is one embedded static file and the short content hash that names its version.
type asset struct {
	data []byte
	hash string
}

// assets are the files under static/ that have a known content type (so not the README).
type assets struct {
	files map[string]asset
}

func loadAssets() *assets {
	a := &assets{files: map[string]asset{}}
	root, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || mime.TypeByExtension(path.Ext(p)) == "" {
			return err
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		a.files[p] = asset{data: data, hash: hex.EncodeToString(sum[:6])}
		return nil
	})
	if err != nil {
		panic(err) // reading an embed.FS cannot fail
	}
	return a
}

// url names a static file with its content hash, so a browser may cache it for a year and still
// fetch the new file the moment it changes.
func (a *assets) url(name string) string {
	if f, ok := a.files[name]; ok {
		return "/static/" + name + "?v=" + f.hash
	}
	return "/static/" + name
}

// staticServe answers GET /static/*. No directory listings.
func (s *Server) staticServe(c echo.Context) error {
	return s.serveAsset(c, c.Param("*"), "public, max-age=31536000, immutable")
}

// faviconServe answers GET /favicon.ico with the site's SVG icon. Pages link the icon under
// /static/, but a browser showing a feed or a JSON answer asks for /favicon.ico all the same;
// it goes by the Content-Type, not the name. Its URL carries no hash, so it is cached for a day.
func (s *Server) faviconServe(c echo.Context) error {
	return s.serveAsset(c, "favicon.svg", "public, max-age=86400")
}

// serveAsset writes one embedded file with the caching its URL allows.
func (s *Server) serveAsset(c echo.Context, name, cacheControl string) error {
	f, ok := s.assets.files[name]
	if !ok {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	h.Set("Cache-Control", cacheControl)
	h.Set("ETag", `"`+f.hash+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(c.Response(), c.Request(), name, time.Time{}, bytes.NewReader(f.data))
	return nil
}

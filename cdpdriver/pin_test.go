package cdpdriver

import (
	"errors"
	"testing"
	"time"
)

// A pinned document is the only one an action's element lookup runs in:
// once the page has committed another (the caller has not taken its
// events yet), a click fails with ErrDocumentChanged and clicks nothing
// in the new document (an eval, which Chromium would already have run
// there, says so); the first lookup that runs in the pinned document
// unpins it, so what the action itself causes is not refused.
func TestPinnedDocument(t *testing.T) {
	ctx, p, site := siteTestOpen(t, "/bench.html", time.Minute)
	clicks := func() string {
		t.Helper()
		v, err := p.Eval(ctx, "document.querySelector('#count').dataset.n || 'none'", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}

	p.TakeEvents()
	p.PinDocument()
	if err := p.Click(ctx, "#count", ClickOptions{}); err != nil {
		t.Fatalf("click in the pinned document: %v", err)
	}
	if got := clicks(); got != `"1"` {
		t.Fatalf("clicks in the pinned document: %s", got)
	}

	p.TakeEvents()
	snapshotTestLoad(ctx, t, p, site+"/bench.html?next") // its commit not taken
	p.PinDocument()
	if p.mainCtx == 0 {
		t.Fatal("the page's own context is not known: has V8's remote object id changed form?")
	}
	// A commit already read: the eval is not even sent.
	if _, err := p.Eval(ctx, "window.ranHere = 1", 5*time.Second); !errors.Is(err, ErrDocumentChanged) || errors.Is(err, ErrRanInNewDocument) {
		t.Fatalf("an eval in a document after the pinned one: %v, want ErrDocumentChanged, not run", err)
	}
	// As if the commit had not been read yet (Chromium holding the eval
	// back): the pin and the cached objects, the old document's, are
	// taken for the current document's.
	pin, docGeneration, mainCtx := p.pin.Load(), p.docGeneration, p.mainCtx
	p.docGeneration = p.decoder.generation.Load()
	p.pin.Store(p.docGeneration + 1)
	// Pinned to the old document's context, it does not run.
	if _, err := p.Eval(ctx, "window.ranHere = 1", 5*time.Second); !errors.Is(err, ErrDocumentChanged) || errors.Is(err, ErrRanInNewDocument) {
		t.Fatalf("an eval pinned to a context that is gone: %v, want ErrDocumentChanged, not run", err)
	}
	// Without the context, the probe ahead of it tells that it ran there.
	p.mainCtx = 0
	if _, err := p.Eval(ctx, "window.ranThere = 1", 5*time.Second); !errors.Is(err, ErrRanInNewDocument) {
		t.Fatalf("an eval that could not be pinned, in a document after the pinned one: %v, want ErrRanInNewDocument", err)
	}
	p.pin.Store(pin)
	p.docGeneration, p.mainCtx = docGeneration, mainCtx
	for _, act := range []func() error{
		func() error { return p.Click(ctx, "#count", ClickOptions{}) },
		func() error { return p.Focus(ctx, "#q") },
		func() error { _, err := p.Type(ctx, "#q", "x", TypeOptions{}); return err },
	} {
		if err := act(); !errors.Is(err, ErrDocumentChanged) {
			t.Fatalf("an action in a document after the pinned one: %v, want ErrDocumentChanged", err)
		}
	}
	p.UnpinDocument()
	if got := clicks(); got != `"none"` {
		t.Fatalf("the new document was clicked: %s", got)
	}
	v, err := p.Eval(ctx, "[document.activeElement.id, document.querySelector('#q').value, window.ranHere, window.ranThere]", 5*time.Second)
	if err != nil || string(v) != `["","",null,1]` {
		t.Fatalf("the new document was focused or typed in: %s %v", v, err)
	}

	// Once the caller knows of the new document, its actions run there.
	p.TakeEvents()
	p.PinDocument()
	if err := p.Click(ctx, "#count", ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	p.UnpinDocument()
	if got := clicks(); got != `"1"` {
		t.Fatalf("clicks in the new document: %s", got)
	}
}

package actors

import (
	"context"

	"github.com/framebus/framebus/cdpdriver"
	"github.com/framebus/framebus/protocol"
)

// fillForm fills several fields in one action, and one frame: every field
// is checked first (see cdpdriver.FormFields), then each is filled in
// document order by the action that fills it alone: fill for text,
// select for a <select>, a real click for a checkbox or radio whose
// state must change.
func (t *Tab) fillForm(ctx context.Context, a protocol.Action) (outcome, error) {
	fields, err := t.page.FormFields(ctx, a.Fields)
	if err != nil {
		return outcome{}, err
	}
	filled := 0
	for _, f := range fields {
		err := t.fillField(ctx, a, f)
		if err != nil {
			// The fields before it were filled: the page changed.
			return outcome{barrier: true, ran: filled > 0 || inputSent(err)}, err
		}
		filled++
	}
	return outcome{barrier: true}, nil
}

func (t *Tab) fillField(ctx context.Context, a protocol.Action, f cdpdriver.FormField) error {
	switch f.Kind {
	case cdpdriver.FieldSelect:
		return t.page.Select(ctx, f.Selector, f.Value)
	case cdpdriver.FieldCheck:
		if !f.Click {
			return nil
		}
		if err := t.page.Click(ctx, f.Selector, cdpdriver.ClickOptions{}); err != nil {
			return err
		}
		checked, err := t.page.Checked(ctx, f.Selector)
		if err != nil {
			return &cdpdriver.InputSentError{Err: err}
		}
		if checked != f.Check {
			return &cdpdriver.InputSentError{Err: protocol.Errorf(protocol.CodeBadRequest, "fill-form: element %s is still %s after a click: the page keeps it so", f.Selector, checkedWord(checked))}
		}
		return nil
	}
	_, err := t.fill(ctx, protocol.Action{Type: "fill", Selector: f.Selector, Text: f.Value, Timeout: a.Timeout})
	return err
}

func checkedWord(checked bool) string {
	if checked {
		return "checked"
	}
	return "unchecked"
}

package protocol

import "testing"

func BenchmarkDecodePlan(b *testing.B) {
	data := []byte(`{"action":{"type":"eval","expression":"1+1","basedOnSequence":12}}`)
	for i := 0; i < b.N; i++ {
		if _, err := DecodePlan(data); err != nil {
			b.Fatal(err)
		}
	}
}

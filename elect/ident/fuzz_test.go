package ident_test

import (
	"errors"
	"testing"

	"github.com/zkherald/herald/elect/ident"
)

// FuzzDecode checks that no data, in any format, panics a decoder, and
// that every failure falls back to the generic form.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":2,"brokerid":3,"timestamp":"1732380000123","kraftControllerEpoch":-1}`))
	f.Add(hbaseMaster("master:16000", "hm1", 16000, 1732380000456, 0, 16010))
	f.Add(activeNodeInfo("ns1", "nn1", "nn1.example.com", 8020, 8019))
	f.Add(activeRMInfo("c1", "rm1"))
	f.Add([]byte(`{"id":"72057594037927940-10.0.0.7:8983_solr-n_0000000003"}`))
	f.Add([]byte(`{"core":"c","node_name":"n","base_url":"u","core_node_name":"core_node2"}`))
	f.Add([]byte(`{"id":"ctl","simpleFields":{"SESSION_ID":"1"}}`))
	f.Add([]byte(`{"brokerId":"b:8080","serviceUrl":"http://b:8080"}`))
	f.Add([]byte(`{"id":"m","ip":16777343,"port":5050,"address":{"ip":"127.0.0.1"}}`))
	f.Add([]byte{0xFF, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range ident.Formats {
			id, err := ident.Decode(fm, "/fuzz/controller", data)
			if err != nil && (!errors.Is(err, ident.ErrMalformed) || !id.Fallback || id.Format != ident.Generic) {
				t.Fatalf("%s: err %v with %+v: want ErrMalformed and the generic form", fm, err, id)
			}
			if err == nil && id.Fallback {
				t.Fatalf("%s: fell back without an error", fm)
			}
			_ = id.String()
		}
		_, _ = ident.ParseEpoch(data)
		_, _ = ident.ParseSolrNode(string(data))
	})
}

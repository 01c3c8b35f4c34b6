package kafkasink

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestCloudEventsSDKReadsKafkaRecords: every record the Kafka sink writes
// (events topic, and the owners topic's values and tombstones) decodes with
// the CloudEvents Go SDK in binary mode, as its Kafka bindings read a
// record, passes event.Validate and keeps its source exactly as herald
// wrote it, for runner-style ids with spaces and a bridge on an unusual
// hostname.
func TestCloudEventsSDKReadsKafkaRecords(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	var evs []publish.Event
	for i, src := range sinktest.CloudEventSources {
		evs = append(evs, sinktest.EveryKind(fmt.Sprintf("/ce/s%d", i), src)...)
	}
	byID := map[string]publish.Event{}
	for _, e := range evs {
		byID[e.ID] = e
		if err := s.Write(context.Background(), []publish.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(r *kgo.Record) {
		t.Helper()
		ev, err := binding.ToEvent(context.Background(), ceKafkaMessage(r))
		if err != nil {
			t.Fatalf("%s: SDK cannot read record: %v", r.Topic, err)
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("%s: SDK: event %s invalid: %v", r.Topic, ev.ID(), err)
		}
		e, ok := byID[ev.ID()]
		if !ok {
			t.Fatalf("%s: SDK read id %q, not written", r.Topic, ev.ID())
		}
		if err := publish.ValidateSource(e.Source); err != nil {
			t.Errorf("source: %v", err)
		}
		if ev.Source() != e.Source || ev.Type() != string(e.Type) || ev.Subject() != e.Group ||
			ev.DataContentType() != "application/json" {
			t.Errorf("%s: SDK read source %q type %q subject %q, want %q %q %q",
				r.Topic, ev.Source(), ev.Type(), ev.Subject(), e.Source, e.Type, e.Group)
		}
	}
	for _, r := range kcat(t, c.Addrs(), cfg.EventsTopic, len(evs)) {
		check(r)
	}
	for _, r := range kcat(t, c.Addrs(), cfg.OwnersTopic, len(sinktest.CloudEventSources)) {
		check(r)
	}
}

// ceKafkaMessage is r as the SDK's Kafka bindings (kafka_sarama,
// kafka_confluent) present a consumed record: header names lower-cased,
// binary mode when ce_specversion names a known version.
func ceKafkaMessage(r *kgo.Record) binding.Message {
	m := &kafkaMsg{value: r.Value, headers: map[string]string{}}
	for _, h := range r.Headers {
		m.headers[strings.ToLower(h.Key)] = string(h.Value)
	}
	m.version = ceSpecs.Version(m.headers[ceSpecs.PrefixedSpecVersionName()])
	return m
}

var ceSpecs = spec.WithPrefix(publish.KafkaPrefix)

type kafkaMsg struct {
	value   []byte
	headers map[string]string
	version spec.Version
}

func (m *kafkaMsg) ReadEncoding() binding.Encoding {
	if m.version != nil { // herald's records are binary mode, never structured
		return binding.EncodingBinary
	}
	return binding.EncodingUnknown
}

func (m *kafkaMsg) ReadStructured(context.Context, binding.StructuredWriter) error {
	return binding.ErrNotStructured
}

func (m *kafkaMsg) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	if m.version == nil {
		return binding.ErrNotBinary
	}
	for k, v := range m.headers {
		var err error
		if strings.HasPrefix(k, publish.KafkaPrefix) {
			if attr := m.version.Attribute(k); attr != nil {
				err = w.SetAttribute(attr, v)
			} else {
				err = w.SetExtension(strings.TrimPrefix(k, publish.KafkaPrefix), v)
			}
		} else if k == publish.ContentTypeName {
			err = w.SetAttribute(m.version.AttributeFromKind(spec.DataContentType), v)
		}
		if err != nil {
			return err
		}
	}
	if m.value != nil {
		return w.SetData(bytes.NewReader(m.value))
	}
	return nil
}

func (m *kafkaMsg) GetAttribute(k spec.Kind) (spec.Attribute, interface{}) {
	if attr := m.version.AttributeFromKind(k); attr != nil {
		return attr, m.headers[attr.PrefixedName()]
	}
	return nil, nil
}

func (m *kafkaMsg) GetExtension(name string) interface{} {
	return m.headers[publish.KafkaPrefix+name]
}

func (m *kafkaMsg) Finish(error) error { return nil }

var _ binding.MessageMetadataReader = (*kafkaMsg)(nil)

package esbulk

import "encoding/json"

// shape is what Vigil reads of a document: the line, and the members that
// say what it is. ECS shippers send those nested (Filebeat, Logstash) or
// dotted (flattened by Vector, Fluent Bit, or hand-made templates); the
// dotted member wins. A member of an unexpected type is as absent: the
// document is still taken. One decoding reads them all (encoding/json
// takes a member whose name differs only in case when none matches
// exactly: a MESSAGE member is read as message).
type shape struct {
	Message   str             `json:"message"`
	Timestamp str             `json:"@timestamp"`
	EventType json.RawMessage `json:"event_type"`
	// Winlog is a Windows event's winlog object (Winlogbeat, vigil import).
	Winlog object    `json:"winlog"`
	Log    logMember `json:"log"`
	Event  struct {
		Dataset str `json:"dataset"`
		Module  str `json:"module"`
	} `json:"-"`
	Fileset struct {
		Name str `json:"name"`
	} `json:"-"`
	Input struct {
		Type str `json:"type"`
	} `json:"-"`
	Host hostMember `json:"host"`

	EventDataset str `json:"event.dataset"`
	EventModule  str `json:"event.module"`
	FilesetName  str `json:"fileset.name"`
	InputType    str `json:"input.type"`
	LogFilePath  str `json:"log.file.path"`
	HostName     str `json:"host.name"`
	HostHostname str `json:"host.hostname"`

	// The nested objects, decoded into the fields above when objects.
	EventObj   object `json:"event"`
	FilesetObj object `json:"fileset"`
	InputObj   object `json:"input"`
}

// decodeShape decodes a document, then its nested objects (a method
// UnmarshalJSON would have the document validated twice).
func decodeShape(doc []byte) (*shape, error) {
	s := &shape{}
	if err := json.Unmarshal(doc, s); err != nil {
		return nil, err
	}
	s.EventObj.into(&s.Event)
	s.FilesetObj.into(&s.Fileset)
	s.InputObj.into(&s.Input)
	return s, nil
}

// str is a member read as a string when it is one.
type str string

func (s *str) UnmarshalJSON(b []byte) error {
	if v, ok := jsonString(b); ok {
		*s = str(v)
	}
	return nil
}

// object is a member kept when it is an object.
type object []byte

func (o *object) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		*o = append((*o)[:0], b...)
	}
	return nil
}

// into decodes the object into v; nothing when it was absent or not one.
func (o object) into(v any) {
	if len(o) > 0 {
		json.Unmarshal(o, v) // members of other types are left empty
	}
}

// logMember is "log": Fluent Bit's line (a string), or ECS's object with
// file.path (nested or dotted).
type logMember struct {
	line string
	path string
}

func (l *logMember) UnmarshalJSON(b []byte) error {
	if v, ok := jsonString(b); ok {
		l.line = v
		return nil
	}
	var o struct {
		FilePath str    `json:"file.path"`
		File     object `json:"file"`
	}
	object(b).into(&o)
	var file struct {
		Path str `json:"path"`
	}
	o.File.into(&file)
	l.path = first(string(o.FilePath), string(file.Path))
	return nil
}

// hostMember is "host": a name (a string), or ECS's object with name and
// hostname.
type hostMember struct {
	line           string
	Name, Hostname string
}

func (h *hostMember) UnmarshalJSON(b []byte) error {
	if v, ok := jsonString(b); ok {
		h.line = v
		return nil
	}
	var o struct {
		Name     str `json:"name"`
		Hostname str `json:"hostname"`
	}
	object(b).into(&o)
	h.Name, h.Hostname = string(o.Name), string(o.Hostname)
	return nil
}

package sqs

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// notification is the JSON an SNS subscription without raw message
// delivery puts in the queue: the published message and its attributes
// inside.
type notification struct {
	Type              string                      `json:"Type"`
	TopicArn          string                      `json:"TopicArn"`
	Message           *string                     `json:"Message"`
	MessageAttributes map[string]notificationAttr `json:"MessageAttributes"`
}

// notificationAttr is an attribute of a notification: {"Type", "Value"}
// as SNS writes it (Binary values base64), or {"DataType",
// "StringValue", "BinaryValue"} as some emulators do.
type notificationAttr struct {
	Type        string `json:"Type"`
	Value       string `json:"Value"`
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue"`
	BinaryValue string `json:"BinaryValue"`
}

// unwrapNotification returns the message and attributes of body when it is
// an SNS notification; ok is false for any other body.
func unwrapNotification(body string) (msg string, attrs map[string]sqstypes.MessageAttributeValue, ok bool) {
	if !strings.HasPrefix(strings.TrimSpace(body), "{") {
		return "", nil, false
	}
	var n notification
	if json.Unmarshal([]byte(body), &n) != nil || n.Type != "Notification" || n.TopicArn == "" || n.Message == nil {
		return "", nil, false
	}
	attrs = make(map[string]sqstypes.MessageAttributeValue, len(n.MessageAttributes))
	for name, a := range n.MessageAttributes {
		typ, val := a.Type, a.Value
		if typ == "" {
			typ, val = a.DataType, a.StringValue
			if strings.HasPrefix(typ, "Binary") {
				val = a.BinaryValue
			}
		}
		v := sqstypes.MessageAttributeValue{DataType: aws.String(typ)}
		if strings.HasPrefix(typ, "Binary") {
			b, err := base64.StdEncoding.DecodeString(val)
			if err != nil {
				continue // not an attribute the envelope reads
			}
			v.BinaryValue = b
		} else {
			v.StringValue = aws.String(val)
		}
		attrs[name] = v
	}
	return *n.Message, attrs, true
}

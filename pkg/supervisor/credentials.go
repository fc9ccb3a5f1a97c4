package supervisor

// credentialsJSON is the format of the credentials in a rotation file.
type credentialsJSON struct {
	AccessKeyID        string `json:"accessKeyID,omitempty"`
	SecretAccessKey    string `json:"secretAccessKey,omitempty"`
	SessionToken       string `json:"sessionToken,omitempty"`
	GCSCredentialsJSON string `json:"gcsCredentialsJSON,omitempty"`
}

// maxCredentialsFile bounds what ReadRotation reads.
const maxCredentialsFile = 1 << 20

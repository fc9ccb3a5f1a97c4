package testserver

// SetRootCredentials sets the root access key and secret key a MinIO
// server starts with from its next Start on, and updates AccessKey and
// SecretKey. Stop, SetRootCredentials, Start simulates a rotated key: the
// old key stops working, the data stays. Owned servers only (NewMinIO):
// the shared one must keep its keys.
func (s *Server) SetRootCredentials(accessKey, secretKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.AccessKey, s.SecretKey = accessKey, secretKey
}

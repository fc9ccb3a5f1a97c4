package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// stsIssuer hands out temporary credentials of a MinIO (its STS
// AssumeRole, signed with the root key): the soak's credential rotation.
// Each set is valid on its own for 12 hours, so a volume switching from
// one to the next never meets a refused key, as a rotation in a cluster
// keeps the old key valid until every node has the new one.
type stsIssuer struct{ srv *testserver.Server }

// assumeRetryFor bounds assume's retries: longer than a MinIO restart
// takes with every core busy (a restart under three soaks' load refused
// connections for more than the 12 s that six tries had covered).
const assumeRetryFor = 2 * time.Minute

// assume returns a new set of credentials, retrying while MinIO is paused
// or restarting.
func (s stsIssuer) assume(ctx context.Context) (objstore.Credentials, error) {
	c := sts.New(sts.Options{
		Region:       s.srv.Region,
		BaseEndpoint: aws.String(s.srv.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.srv.AccessKey, SecretAccessKey: s.srv.SecretKey}, nil
		}),
	})
	var last error
	for deadline := time.Now().Add(assumeRetryFor); time.Now().Before(deadline); {
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := c.AssumeRole(actx, &sts.AssumeRoleInput{
			RoleArn: aws.String("arn:minio:iam:::role/soak"), RoleSessionName: aws.String("soak"),
			DurationSeconds: aws.Int32(12 * 3600),
		})
		cancel()
		if err == nil {
			return objstore.Credentials{AccessKeyID: aws.ToString(out.Credentials.AccessKeyId),
				SecretAccessKey: aws.ToString(out.Credentials.SecretAccessKey),
				SessionToken:    aws.ToString(out.Credentials.SessionToken)}, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return objstore.Credentials{}, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return objstore.Credentials{}, fmt.Errorf("sts AssumeRole: %w", last)
}

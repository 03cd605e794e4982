package policy

import "strings"

// actionNames is every S3 action a policy may name (the IAM service
// authorization reference for Amazon S3). A policy naming another, or a
// wildcard that matches none of these, is MalformedPolicy. The index of a
// name is its bit in a statement's action set.
var actionNames = [...]string{
	"s3:AbortMultipartUpload",
	"s3:BypassGovernanceRetention",
	"s3:CreateAccessPoint",
	"s3:CreateAccessPointForObjectLambda",
	"s3:CreateBucket",
	"s3:CreateJob",
	"s3:CreateMultiRegionAccessPoint",
	"s3:CreateSession",
	"s3:DeleteAccessPoint",
	"s3:DeleteAccessPointForObjectLambda",
	"s3:DeleteAccessPointPolicy",
	"s3:DeleteAccessPointPolicyForObjectLambda",
	"s3:DeleteBucket",
	"s3:DeleteBucketOwnershipControls",
	"s3:DeleteBucketPolicy",
	"s3:DeleteBucketWebsite",
	"s3:DeleteJobTagging",
	"s3:DeleteMultiRegionAccessPoint",
	"s3:DeleteObject",
	"s3:DeleteObjectTagging",
	"s3:DeleteObjectVersion",
	"s3:DeleteObjectVersionTagging",
	"s3:DeleteStorageLensConfiguration",
	"s3:DeleteStorageLensConfigurationTagging",
	"s3:DescribeJob",
	"s3:DescribeMultiRegionAccessPointOperation",
	"s3:GetAccelerateConfiguration",
	"s3:GetAccessPoint",
	"s3:GetAccessPointConfigurationForObjectLambda",
	"s3:GetAccessPointForObjectLambda",
	"s3:GetAccessPointPolicy",
	"s3:GetAccessPointPolicyForObjectLambda",
	"s3:GetAccessPointPolicyStatus",
	"s3:GetAccessPointPolicyStatusForObjectLambda",
	"s3:GetAccountPublicAccessBlock",
	"s3:GetAnalyticsConfiguration",
	"s3:GetBucketAcl",
	"s3:GetBucketCORS",
	"s3:GetBucketLocation",
	"s3:GetBucketLogging",
	"s3:GetBucketNotification",
	"s3:GetBucketObjectLockConfiguration",
	"s3:GetBucketOwnershipControls",
	"s3:GetBucketPolicy",
	"s3:GetBucketPolicyStatus",
	"s3:GetBucketPublicAccessBlock",
	"s3:GetBucketRequestPayment",
	"s3:GetBucketTagging",
	"s3:GetBucketVersioning",
	"s3:GetBucketWebsite",
	"s3:GetEncryptionConfiguration",
	"s3:GetIntelligentTieringConfiguration",
	"s3:GetInventoryConfiguration",
	"s3:GetJobTagging",
	"s3:GetLifecycleConfiguration",
	"s3:GetMetricsConfiguration",
	"s3:GetMultiRegionAccessPoint",
	"s3:GetMultiRegionAccessPointPolicy",
	"s3:GetMultiRegionAccessPointPolicyStatus",
	"s3:GetObject",
	"s3:GetObjectAcl",
	"s3:GetObjectAttributes",
	"s3:GetObjectLegalHold",
	"s3:GetObjectRetention",
	"s3:GetObjectTagging",
	"s3:GetObjectTorrent",
	"s3:GetObjectVersion",
	"s3:GetObjectVersionAcl",
	"s3:GetObjectVersionAttributes",
	"s3:GetObjectVersionForReplication",
	"s3:GetObjectVersionTagging",
	"s3:GetObjectVersionTorrent",
	"s3:GetReplicationConfiguration",
	"s3:GetStorageLensConfiguration",
	"s3:GetStorageLensConfigurationTagging",
	"s3:GetStorageLensDashboard",
	"s3:InitiateReplication",
	"s3:ListAccessPoints",
	"s3:ListAccessPointsForObjectLambda",
	"s3:ListAllMyBuckets",
	"s3:ListBucket",
	"s3:ListBucketMultipartUploads",
	"s3:ListBucketVersions",
	"s3:ListJobs",
	"s3:ListMultiRegionAccessPoints",
	"s3:ListMultipartUploadParts",
	"s3:ListStorageLensConfigurations",
	"s3:ObjectOwnerOverrideToBucketOwner",
	"s3:PutAccelerateConfiguration",
	"s3:PutAccessPointConfigurationForObjectLambda",
	"s3:PutAccessPointPolicy",
	"s3:PutAccessPointPolicyForObjectLambda",
	"s3:PutAccessPointPublicAccessBlock",
	"s3:PutAccountPublicAccessBlock",
	"s3:PutAnalyticsConfiguration",
	"s3:PutBucketAcl",
	"s3:PutBucketCORS",
	"s3:PutBucketLogging",
	"s3:PutBucketNotification",
	"s3:PutBucketObjectLockConfiguration",
	"s3:PutBucketOwnershipControls",
	"s3:PutBucketPolicy",
	"s3:PutBucketPublicAccessBlock",
	"s3:PutBucketRequestPayment",
	"s3:PutBucketTagging",
	"s3:PutBucketVersioning",
	"s3:PutBucketWebsite",
	"s3:PutEncryptionConfiguration",
	"s3:PutIntelligentTieringConfiguration",
	"s3:PutInventoryConfiguration",
	"s3:PutJobTagging",
	"s3:PutLifecycleConfiguration",
	"s3:PutMetricsConfiguration",
	"s3:PutMultiRegionAccessPointPolicy",
	"s3:PutObject",
	"s3:PutObjectAcl",
	"s3:PutObjectLegalHold",
	"s3:PutObjectRetention",
	"s3:PutObjectTagging",
	"s3:PutObjectVersionAcl",
	"s3:PutObjectVersionTagging",
	"s3:PutReplicationConfiguration",
	"s3:PutStorageLensConfiguration",
	"s3:PutStorageLensConfigurationTagging",
	"s3:ReplicateDelete",
	"s3:ReplicateObject",
	"s3:ReplicateTags",
	"s3:RestoreObject",
	"s3:UpdateJobPriority",
	"s3:UpdateJobStatus",
}

// actionWords is the size of a statement's action bit set.
const actionWords = (len(actionNames) + 63) / 64

type actionSet [actionWords]uint64

func (s *actionSet) set(i int)      { s[i/64] |= 1 << (i % 64) }
func (s *actionSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

// actionIndex maps each action's canonical spelling to its index; lower
// the same in lower case, for requests spelled otherwise.
var actionIndex, actionIndexLower = func() (map[string]int, map[string]int) {
	m, l := make(map[string]int, len(actionNames)), make(map[string]int, len(actionNames))
	for i, n := range actionNames {
		m[n] = i
		l[strings.ToLower(n)] = i
	}
	return m, l
}()

// lookupAction returns the index of action, -1 if it is not an S3 action.
// Callers name actions canonically ("s3:GetObject"): that lookup
// allocates nothing.
func lookupAction(action string) int {
	if i, ok := actionIndex[action]; ok {
		return i
	}
	if i, ok := actionIndexLower[strings.ToLower(action)]; ok {
		return i
	}
	return -1
}

// The resource kinds an action applies to.
type resourceKind uint8

const (
	kindOther  resourceKind = iota // account-level, jobs, access points: not checked
	kindBucket                     // arn:aws:s3:::bucket
	kindObject                     // arn:aws:s3:::bucket/key
)

// actionKind reports what an action's resource is, for S3's check that a
// bucket policy's statement names a resource each action applies to.
func actionKind(name string) resourceKind {
	n := strings.TrimPrefix(name, "s3:")
	switch n {
	case "AbortMultipartUpload", "ListMultipartUploadParts", "ReplicateDelete", "ReplicateTags",
		"BypassGovernanceRetention", "InitiateReplication", "RestoreObject":
		return kindObject
	case "CreateBucket", "DeleteBucket", "ListBucket", "ListBucketMultipartUploads", "ListBucketVersions":
		return kindBucket
	}
	switch {
	case strings.Contains(n, "AccessPoint"), strings.Contains(n, "Job"), strings.Contains(n, "StorageLens"),
		strings.Contains(n, "MultiRegion"), strings.Contains(n, "Account"), n == "ListAllMyBuckets", n == "CreateSession":
		return kindOther
	case strings.Contains(n, "Bucket"):
		return kindBucket
	case strings.Contains(n, "Object"):
		return kindObject
	}
	return kindBucket // the bucket's configuration documents
}

// conditionKeys is every condition key a policy may name, in lower case:
// AWS's global keys and S3's. Keys ending in "/" take a suffix (a tag
// key). A policy naming another is MalformedPolicy.
var conditionKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{
		// global condition keys
		"aws:CalledVia", "aws:CalledViaFirst", "aws:CalledViaLast", "aws:CurrentTime", "aws:EpochTime",
		"aws:FederatedProvider", "aws:MultiFactorAuthAge", "aws:MultiFactorAuthPresent",
		"aws:PrincipalAccount", "aws:PrincipalArn", "aws:PrincipalIsAWSService", "aws:PrincipalOrgID",
		"aws:PrincipalOrgPaths", "aws:PrincipalServiceName", "aws:PrincipalServiceNamesList",
		"aws:PrincipalTag/", "aws:PrincipalType", "aws:Referer", "aws:RequestedRegion", "aws:RequestTag/",
		"aws:ResourceAccount", "aws:ResourceOrgID", "aws:ResourceOrgPaths", "aws:ResourceTag/",
		"aws:SecureTransport", "aws:SourceAccount", "aws:SourceArn", "aws:SourceIdentity", "aws:SourceIp",
		"aws:SourceOrgID", "aws:SourceOrgPaths", "aws:SourceOwner", "aws:SourceVpc", "aws:SourceVpce", "aws:SourceVpcArn",
		"aws:TagKeys", "aws:TokenIssueTime", "aws:UserAgent", "aws:userid", "aws:username", "aws:ViaAWSService",
		"aws:VpcSourceIp", "aws:EC2InstanceSourceVPC", "aws:EC2InstanceSourcePrivateIPv4",
		// Amazon S3's condition keys
		"s3:AccessGrantsInstanceArn", "s3:AccessPointNetworkOrigin", "s3:authType", "s3:DataAccessPointAccount",
		"s3:DataAccessPointArn", "s3:delimiter", "s3:ExistingJobOperation", "s3:ExistingJobPriority",
		"s3:ExistingObjectTag/", "s3:if-match", "s3:if-none-match", "s3:JobSuspendedCause", "s3:LocationConstraint",
		"s3:max-keys", "s3:object-lock-legal-hold", "s3:object-lock-mode",
		"s3:object-lock-remaining-retention-days", "s3:object-lock-retain-until-date", "s3:ObjectCreationOperation",
		"s3:prefix", "s3:RequestJobOperation", "s3:RequestJobPriority", "s3:RequestObjectTag/",
		"s3:RequestObjectTagKeys", "s3:ResourceAccount", "s3:signatureAge", "s3:signatureversion", "s3:TlsVersion",
		"s3:VersionId", "s3:x-amz-acl", "s3:x-amz-content-sha256", "s3:x-amz-copy-source",
		"s3:x-amz-grant-full-control", "s3:x-amz-grant-read", "s3:x-amz-grant-read-acp", "s3:x-amz-grant-write",
		"s3:x-amz-grant-write-acp", "s3:x-amz-metadata-directive", "s3:x-amz-object-ownership",
		"s3:x-amz-server-side-encryption", "s3:x-amz-server-side-encryption-aws-kms-key-id",
		"s3:x-amz-server-side-encryption-customer-algorithm", "s3:x-amz-storage-class",
		"s3:x-amz-website-redirect-location", "s3:x-amz-checksum-algorithm",
	} {
		m[strings.ToLower(k)] = true
	}
	return m
}()

// validConditionKey reports whether key (lower case) is a known condition
// key, or a known prefix followed by a non-empty suffix.
func validConditionKey(key string) bool {
	if conditionKeys[key] {
		return !strings.HasSuffix(key, "/")
	}
	if i := strings.IndexByte(key, '/'); i > 0 && i < len(key)-1 {
		return conditionKeys[key[:i+1]]
	}
	return false
}

// keyActions lists, for the S3 condition keys that S3 ties to some
// actions, the actions (lower case, without "s3:") a statement naming the
// key may name outright: S3 refuses a statement whose condition no named
// action can have ("Conditions do not apply to combination of actions and
// resources in statement").
var keyActions = map[string][]string{
	"s3:prefix":    {"listbucket", "listbucketversions"},
	"s3:delimiter": {"listbucket", "listbucketversions"},
	"s3:max-keys":  {"listbucket", "listbucketversions"},
	"s3:x-amz-acl": {"putobject", "putobjectacl", "putobjectversionacl", "putbucketacl", "createbucket"},
	"s3:versionid": {"getobjectversion", "deleteobjectversion", "getobjectversionacl", "putobjectversionacl",
		"getobjectversiontagging", "putobjectversiontagging", "deleteobjectversiontagging", "getobjectversionattributes",
		"getobjectversiontorrent", "getobjectversionforreplication", "putobjectversiontagging"},
}

func init() {
	for _, g := range []string{"full-control", "read", "read-acp", "write", "write-acp"} {
		keyActions["s3:x-amz-grant-"+g] = keyActions["s3:x-amz-acl"]
	}
}

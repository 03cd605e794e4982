package metasql

// Statements are the statements both backends run in transactions of their
// own, in one dialect, made once by NewStatements (SQLite prepares
// statements by their text). Each field's builder, in the file of its
// role, says its arguments.
type Statements struct {
	// Users and refresh tokens (users.go).
	InsertToken                 string
	UserData                    string   // of the user ph(1) at ph(2), for DeleteUser
	DataBuckets, BackendUploads string   // of the user ph(1), for DeleteUser
	DeleteUser                  []string // deleteUserStatements of the user ph(1) at ph(2)
	// Objects (objects.go): the range scans of the latest versions and the
	// version scans by inclusive and bounded.
	RangeScans, VersionScans [2][2]string
	// DeletedScans are RangeScans of the keys whose latest version is a
	// delete marker (ListOptions.DeleteMarkers), each row the marker
	// (ScanVersion).
	DeletedScans [2][2]string
	// DeleteObject deletes the version ph(3) of bucket ph(1), key ph(2).
	DeleteObject string
	// LatestID is the condition "version_id is the latest version's of
	// bucket ph(1), key ph(2)" (on objects o): the key's first row in
	// primary-key order.
	LatestID string
	// Demote makes version ph(3) of bucket ph(1), key ph(2) no longer
	// latest; Promote makes the key's newest version the latest.
	Demote, Promote string
	// NullSeq reads the seq of the null version of bucket ph(1), key
	// ph(2) (no row: none).
	NullSeq string
	PartsOf string // the parts of the parts sets of the list ph(1) (ScanPartOf)
	// Uploads and their parts (uploads.go).
	InsertUpload, UploadPlace, UploadMarker, Parts, Part, UpsertPart string
	DeleteUpload                                                     [2]string
	CopyParts                                                        string // args parts_id, upload_id, the list of the part numbers
	// Stagings (staging.go).
	InsertStaging, StagingLease, GrowStaging, DeleteDeclared string
	Group, Credit, DeclaredLeft                              string // GroupQuery, creditQuery, declaredLeftUpdate over ph(1)…
}

// NewStatements makes the Statements of dialect d.
func NewStatements(d Dialect) Statements {
	ph := d.PH
	return Statements{
		InsertToken:    insertTokenSQL(ph),
		UserData:       userDataQuery(ph(1), ph(2)),
		DataBuckets:    dataBucketsQuery(ph(1)),
		BackendUploads: backendUploadsQuery(ph(1)),
		DeleteUser:     deleteUserStatements(ph(1), ph(2), d.InlineTable),
		RangeScans: [2][2]string{
			{rangeScanSQL(false, false, ph), rangeScanSQL(false, true, ph)},
			{rangeScanSQL(true, false, ph), rangeScanSQL(true, true, ph)},
		},
		DeletedScans: [2][2]string{
			{deletedScanSQL(false, false, d), deletedScanSQL(false, true, d)},
			{deletedScanSQL(true, false, d), deletedScanSQL(true, true, d)},
		},
		VersionScans: [2][2]string{
			{versionScanSQL(false, false, ph), versionScanSQL(false, true, ph)},
			{versionScanSQL(true, false, ph), versionScanSQL(true, true, ph)},
		},
		DeleteObject:   "DELETE FROM objects WHERE bucket = " + ph(1) + " AND key = " + ph(2) + " AND " + VersionIs("", ph(3)),
		LatestID:       latestIDCond(ph),
		Demote:         "UPDATE objects SET is_latest = false WHERE bucket = " + ph(1) + " AND key = " + ph(2) + " AND " + VersionIs("", ph(3)),
		Promote:        "UPDATE objects SET is_latest = true WHERE bucket = " + ph(1) + " AND key = " + ph(2) + " AND seq = " + LatestSeqOf(ph),
		NullSeq:        "SELECT seq FROM objects WHERE bucket = " + ph(1) + " AND key = " + ph(2) + " AND version_id = 'null'",
		PartsOf:        partsOfSQL(d.In("parts_id", 1)),
		CopyParts:      copyPartsSQL(d.In("number", 3), ph),
		InsertUpload:   insertUploadSQL(ph),
		UploadPlace:    uploadPlaceSQL(ph),
		UploadMarker:   uploadMarkerSQL(ph),
		Parts:          partsSQL(ph),
		Part:           partSQL(ph),
		UpsertPart:     upsertPartSQL(ph),
		DeleteUpload:   deleteUploadSQL(ph),
		InsertStaging:  insertStagingSQL(ph),
		StagingLease:   stagingLeaseSQL(ph),
		GrowStaging:    "UPDATE staging SET bytes = " + ph(1) + " WHERE blob_key = " + ph(2),
		DeleteDeclared: "DELETE FROM staging WHERE blob_key = " + ph(1),
		Group:          GroupQuery(ph(1), ph(2), ph(3)),
		Credit:         creditQuery(ph(1), ph(2), ph(3), ph(4)),
		DeclaredLeft:   declaredLeftUpdate(ph(1), ph(2), ph(3)),
	}
}

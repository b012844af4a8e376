package fsm

// A Feature is something a job or a database load may ask for that only
// replicas of some command level apply as asked: a replica below it would
// apply the entry without the feature (run the job without its files,
// once instead of on its schedule, load a queue without its policy). The
// leader proposes an entry asking for a feature only once every server
// applies its Level; a job asking for one whose Entry is set is proposed
// as that entry type, which an older replica refuses rather than
// misapply. This table is the one place a feature's level is written.
type Feature struct {
	// Name says what asks for it, for messages: "a cron job".
	Name string
	// Level is the command level every server must apply.
	Level MessageType
	// Entry is the Submit entry type a job with it is proposed as; 0
	// for a feature carried in any (mail) or not a job's.
	Entry MessageType
}

// The features, newest level last within jobs' and databases'.
var (
	FeatureDependencies = Feature{"a dependent job", SubmitAfterType, SubmitAfterType}
	FeatureDir          = Feature{"a job with a working directory", SubmitDirType, SubmitDirType}
	// A cron job is its own entry type (29), but it runs only where its
	// firings (CronFire, 30) are applied.
	FeatureCron   = Feature{"a cron job", CronFireType, SubmitCronType}
	FeatureMail   = Feature{"a job with mail", MailSentType, 0}
	FeatureLimits = Feature{"a job with a time limit or a warning signal", SubmitLimitsType, SubmitLimitsType}
	FeatureGang   = Feature{"a gang job", SubmitGangType, SubmitGangType}
	// Files are their own entry type (37); their outputs are kept by
	// OutputsKept (38).
	FeatureFiles = Feature{"a job with copy_in or copy_out", OutputsKeptType, SubmitFilesType}
	// Resources: --cpus above 1, --gpus, --gres, --disk, --license.
	FeatureResources = Feature{"a job asking for CPUs, GPUs, generic resources, disk or licences", SubmitResourcesType, SubmitResourcesType}
	// Checkpoints (--checkpoint, --checkpoint-exit) are carried in any
	// Submit entry; the job is proposed only once every server applies
	// CheckpointKept (42), which keeps them.
	FeatureCheckpoint = Feature{"a job with checkpoints", CheckpointKeptType, 0}

	// Owner-policy settings came with MailSent (31), in LoadDatabase
	// fields an older replica ignores.
	FeatureOwnerSettings  = Feature{"a database with owner-policy settings", MailSentType, 0}
	FeatureQueueKillGrace = Feature{"a database with kill_grace on a queue", SubmitLimitsType, 0}
	FeatureQueuePolicy    = Feature{"a database with a placement policy on a queue", SubmitGangType, 0}
	// Fair share and per-user limits came with FairShareStart (39), in
	// LoadDatabase fields an older replica ignores.
	FeatureFairShare = Feature{"a database with fair share or per-user limits", FairShareStartType, 0}
	FeatureLicenses  = Feature{"a database with licences", SubmitResourcesType, 0}
	// The interactive queue came with SessionEvent (41), in a
	// LoadDatabase field an older replica ignores.
	FeatureInteractiveQueue = Feature{"a database with an interactive queue", SessionEventType, 0}
	// A prime-time window is switched only by PrimeTimeSwitch (43); an
	// older replica would load the queue without it.
	FeaturePrimeTime = Feature{"a database with a prime-time window", PrimeTimeSwitchType, 0}
	// Preemption came with Preempt (44), in a LoadDatabase field an
	// older replica ignores.
	FeatureQueuePreempt = Feature{"a database with a preempting queue", PreemptType, 0}
	// FeaturePolicy is a site policy script (PolicyLoad, 45): a replica
	// below it would stop at the entry, so none is proposed until every
	// server applies it.
	FeaturePolicy = Feature{"a site policy script", PolicyLoadType, 0}
)

// jobFeatures is every feature a job spec may ask for, with the test of
// whether it does, newest entry type first: the order SubmitEntryType
// picks in.
var jobFeatures = []struct {
	Feature
	asks func(*JobSpec) bool
}{
	{FeatureCheckpoint, (*JobSpec).HasCheckpoint},
	{FeatureResources, (*JobSpec).HasResources},
	{FeatureFiles, (*JobSpec).HasFiles},
	{FeatureGang, func(s *JobSpec) bool { return s.Gang }},
	{FeatureLimits, (*JobSpec).HasLimits},
	{FeatureMail, func(s *JobSpec) bool { return s.Mail != "" }},
	{FeatureCron, func(s *JobSpec) bool { return s.Cron != "" }},
	{FeatureDir, func(s *JobSpec) bool { return s.Dir != "" }},
	{FeatureDependencies, (*JobSpec).HasDependencies},
}

// Features returns the features s asks for, newest entry type first.
func (s *JobSpec) Features() []Feature {
	var out []Feature
	for _, f := range jobFeatures {
		if f.asks(s) {
			out = append(out, f.Feature)
		}
	}
	return out
}

// SubmitEntryType is the entry type a job of spec s is proposed as,
// before the leader's shortcut that places it at once (SubmitPlace): the
// entry type of the newest feature it asks for that has one (each newer
// type also carries everything the older ones do), else SubmitType.
func SubmitEntryType(s *JobSpec) MessageType {
	for _, f := range jobFeatures {
		if f.Entry != 0 && f.asks(s) {
			return f.Entry
		}
	}
	return SubmitType
}

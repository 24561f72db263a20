// Package slurmagent places Slurm's jobs through the fabric manager: a
// job_submit/lua script holds every job of a torus partition, and the
// agent picks each held job's nodes with the service's selection, pins
// the job to them (ReqNodeList) and releases the hold once the job's
// routing table is verified (one the service builds after its answer
// keeps the job held until then), frees the nodes in the service when
// the job ends, and carries node failures both ways. The script refuses
// the ways around icn (another partition listed beside icn's,
// --nodelist, moves and releases icn did not make) and tells a user's
// hold from icn's: the agent places a job only once its user has
// released it.
package slurmagent

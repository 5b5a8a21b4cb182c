/*
 * znskit fio external ioengine: the thin C shim.
 *
 * It owns only what needs fio's own headers: the struct ioengine_ops, the
 * engine options, and the translation between fio's structures (thread_data,
 * fio_file, io_u, zbd_zone) and the Rust library's C ABI (znskit_fio_* in
 * crates/zns-fio/src/ffi.rs), which does the real work: it runs the emulated
 * device on the wall-clock-paced runtime in fio's main process and serves it
 * to the job processes fio forks.
 *
 * Build (scripts/build-fio-engine does it): compiled against the configured
 * fio source tree that the fio binary was built from, because fio's struct
 * layouts depend on its version and its configure result:
 *   gcc -O2 -fPIC -D_GNU_SOURCE -include $FIO/config-host.h -I$FIO -c znskit_fio.c
 *   gcc -shared -o libznskit_fio.so znskit_fio.o libzns_fio.a -lpthread -ldl -lm
 *
 * Use: ioengine=external:/path/libznskit_fio.so, filename=<profile | profile
 * TOML | device image | raid\:MEMBERS,…>, zonemode=zbd, direct=1. See
 * docs/fio-engine.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"
#include "zbd_types.h"

#if FIO_IOOPS_VERSION < 30
#error "znskit_fio needs fio >= 3.27 (get_max_open_zones); build it against fio 3.33's tree"
#endif

/* --- the Rust library's C ABI (crates/zns-fio/src/ffi.rs) --- */

struct znskit_geometry {
	uint64_t lba_bytes;
	uint64_t capacity_bytes;
	uint64_t zone_bytes;
	uint64_t zone_cap_bytes;
	uint64_t zone_count;
	uint64_t max_open_zones;
	uint64_t max_active_zones;
	uint64_t max_transfer_bytes;
	uint64_t zoned;
};

struct znskit_zone {
	uint64_t start_bytes;
	uint64_t wp_bytes;
	uint64_t len_bytes;
	uint64_t capacity_bytes;
	uint32_t zone_type;
	uint32_t cond;
};

struct znskit_client;

void znskit_fio_loaded(void);
void znskit_fio_shutdown(void);
int znskit_fio_setup(const char *filename, double speed, const char *host_stack,
		     uint64_t seed, int64_t spin_us,
		     struct znskit_geometry *geo, char *err,
		     size_t err_len);
int znskit_fio_geometry(const char *filename, struct znskit_geometry *geo);
struct znskit_client *znskit_fio_open(const char *filename, char *err,
				      size_t err_len);
void znskit_fio_close(struct znskit_client *c);
void *znskit_fio_iomem_alloc(struct znskit_client *c, size_t len_bytes);
void znskit_fio_iomem_free(struct znskit_client *c);
int znskit_fio_queue(struct znskit_client *c, uint64_t tag, int kind,
		     uint64_t offset_bytes, uint64_t len_bytes, const void *buf);
int znskit_fio_commit(struct znskit_client *c);
int znskit_fio_getevents(struct znskit_client *c, unsigned int min,
			 unsigned int max, int timeout_ms);
int znskit_fio_event(struct znskit_client *c, unsigned int idx, uint64_t *tag,
		     int *err, uint16_t *nvme_status);
void znskit_fio_describe_status(uint16_t code, char *out, size_t out_len);
int znskit_fio_report_zones(struct znskit_client *c, const char *filename,
			    uint64_t offset_bytes, struct znskit_zone *zones,
			    unsigned int nr_zones);
int znskit_fio_zone_range(struct znskit_client *c, const char *filename,
			  int finish, uint64_t offset_bytes, uint64_t len_bytes);

/* --- engine options --- */

struct znskit_options {
	void *pad; /* an option at offset 0 would confuse fio's parser */
	char *speed;
	char *host_stack;
	unsigned long long seed;
	char *spin_us;
};

static struct fio_option options[] = {
	{
		.name	= "znskit_speed",
		.lname	= "znskit pacing speed",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct znskit_options, speed),
		.help	= "Pacing of the emulated device: one device second takes 1/speed wall seconds (default 1 = real time)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "znskit_host_stack",
		.lname	= "znskit host stack",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct znskit_options, host_stack),
		.help	= "Host stack overheads the device adds: spdk, io-uring-none (default, as zns bench for kernel engines), io-uring-mq-deadline",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "znskit_seed",
		.lname	= "znskit seed",
		.type	= FIO_OPT_ULL,
		.off1	= offsetof(struct znskit_options, seed),
		.help	= "Seed of the device's runtime (default 1)",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "znskit_spin_us",
		.lname	= "znskit pacer busy-poll window",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct znskit_options, spin_us),
		.help	= "Device waits up to this many microseconds busy-poll instead of sleeping (default 100; 0 = always sleep)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

/* --- per-job state --- */

struct znskit_td {
	pid_t pid; /* fio keeps thread_data in shared memory: only the job's
		      own process may use its connection */
	struct znskit_client *client;
	struct io_u **events;
	unsigned int nr_events;
};

static struct znskit_client *td_client(struct thread_data *td)
{
	struct znskit_td *z = td->io_ops_data;

	return z && z->pid == getpid() ? z->client : NULL;
}

/* Starts (or finds) the device of one file and makes fio see it as a zoned
 * block device of the right size: a regular-file target would make fio
 * emulate zones itself and never ask the engine. */
static int znskit_setup_file(struct thread_data *td, struct fio_file *f)
{
	struct znskit_options *o = td->eo;
	struct znskit_geometry geo;
	char err[512] = "";
	double speed = 1.0;
	long long spin_us = -1;
	int ret;

	if (o && o->spin_us && o->spin_us[0]) {
		char *end = NULL;

		errno = 0;
		spin_us = strtoll(o->spin_us, &end, 10);
		if (errno || end == o->spin_us || *end || spin_us < 0 ||
		    spin_us > 1000000) {
			log_err("znskit: znskit_spin_us=%s: not a whole number of microseconds in 0..=1000000\n",
				o->spin_us);
			return EINVAL;
		}
	}
	if (o && o->speed && o->speed[0]) {
		char *end = NULL;

		errno = 0;
		speed = strtod(o->speed, &end);
		if (errno || end == o->speed || *end || !(speed > 0.0) ||
		    speed > 1e9) {
			log_err("znskit: znskit_speed=%s: not a number > 0\n",
				o->speed);
			return EINVAL;
		}
	}
	ret = znskit_fio_setup(f->file_name, speed, o ? o->host_stack : NULL,
			       o ? o->seed : 0, spin_us, &geo, err,
			       sizeof(err));
	if (ret < 0) {
		log_err("znskit: %s\n", err);
		return -ret;
	}
	f->filetype = FIO_TYPE_BLOCK;
	f->real_file_size = geo.capacity_bytes;
	fio_file_set_size_known(f);
	return 0;
}

static int fio_znskit_setup(struct thread_data *td)
{
	struct fio_file *f;
	unsigned int i;
	int ret;

	for_each_file(td, f, i) {
		ret = znskit_setup_file(td, f);
		if (ret)
			return ret;
	}
	return 0;
}

static int fio_znskit_get_file_size(struct thread_data *td, struct fio_file *f)
{
	if (fio_file_size_known(f))
		return 0;
	return znskit_setup_file(td, f);
}

static int fio_znskit_init(struct thread_data *td)
{
	struct znskit_td *z;
	char err[512] = "";

	if (td->o.nr_files != 1 || !td->files || !td->files[0]) {
		log_err("znskit: one filename per job (a device); got %u\n",
			td->o.nr_files);
		return 1;
	}
	z = calloc(1, sizeof(*z));
	if (!z)
		return 1;
	z->events = calloc(td->o.iodepth + 1, sizeof(struct io_u *));
	if (!z->events) {
		free(z);
		return 1;
	}
	z->client = znskit_fio_open(td->files[0]->file_name, err, sizeof(err));
	if (!z->client) {
		log_err("znskit: %s\n", err);
		free(z->events);
		free(z);
		return 1;
	}
	z->pid = getpid();
	td->io_ops_data = z;
	return 0;
}

static void fio_znskit_cleanup(struct thread_data *td)
{
	struct znskit_td *z = td->io_ops_data;

	if (!z)
		return;
	znskit_fio_close(z->client);
	free(z->events);
	free(z);
	td->io_ops_data = NULL;
}

static int fio_znskit_iomem_alloc(struct thread_data *td, size_t total_mem)
{
	struct znskit_client *c = td_client(td);
	void *p;

	if (!c)
		return 1;
	p = znskit_fio_iomem_alloc(c, total_mem);
	if (!p)
		return 1;
	td->orig_buffer = p;
	return 0;
}

static void fio_znskit_iomem_free(struct thread_data *td)
{
	struct znskit_client *c = td_client(td);

	if (c)
		znskit_fio_iomem_free(c);
	td->orig_buffer = NULL;
}

static int fio_znskit_open_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int fio_znskit_close_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static enum fio_q_status fio_znskit_queue(struct thread_data *td,
					  struct io_u *io_u)
{
	struct znskit_client *c = td_client(td);
	int kind, ret;

	fio_ro_check(td, io_u);

	switch (io_u->ddir) {
	case DDIR_READ:
		kind = 0;
		break;
	case DDIR_WRITE:
		kind = 1;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		kind = 2;
		break;
	case DDIR_TRIM:
		/* on a zoned device a trim of whole zones is a zone reset */
		ret = znskit_fio_zone_range(c, io_u->file->file_name, 0,
					    io_u->offset, io_u->xfer_buflen);
		io_u->error = ret < 0 ? -ret : 0;
		return FIO_Q_COMPLETED;
	default:
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}

	ret = znskit_fio_queue(c, (uint64_t)(uintptr_t)io_u, kind,
			       io_u->offset, io_u->xfer_buflen, io_u->xfer_buf);
	if (ret < 0) {
		io_u->error = -ret;
		return FIO_Q_COMPLETED;
	}
	return FIO_Q_QUEUED;
}

static int fio_znskit_commit(struct thread_data *td)
{
	int ret = znskit_fio_commit(td_client(td));

	return ret < 0 ? -ret : 0;
}

static int fio_znskit_getevents(struct thread_data *td, unsigned int min,
				unsigned int max, const struct timespec *t)
{
	struct znskit_td *z = td->io_ops_data;
	int timeout_ms = -1;
	int n, i;

	if (t)
		timeout_ms = t->tv_sec * 1000 + (t->tv_nsec + 999999) / 1000000;
	if (max > td->o.iodepth)
		max = td->o.iodepth;
	n = znskit_fio_getevents(z->client, min, max, timeout_ms);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		uint64_t tag = 0;
		uint16_t status = 0;
		int err = 0;
		struct io_u *io_u;

		if (znskit_fio_event(z->client, i, &tag, &err, &status) < 0)
			return -EIO;
		io_u = (struct io_u *)(uintptr_t)tag;
		io_u->error = err;
		if (err) {
			char what[128];

			znskit_fio_describe_status(status, what, sizeof(what));
			log_err("znskit: %s of %llu bytes at offset %llu failed: %s -> %s\n",
				io_ddir_name(io_u->ddir),
				(unsigned long long)io_u->xfer_buflen,
				(unsigned long long)io_u->offset, what,
				strerror(err));
			io_u->resid = io_u->xfer_buflen;
		} else {
			io_u->resid = 0;
		}
		z->events[i] = io_u;
	}
	z->nr_events = n;
	return n;
}

static struct io_u *fio_znskit_event(struct thread_data *td, int event)
{
	struct znskit_td *z = td->io_ops_data;

	return z->events[event];
}

static int fio_znskit_get_zoned_model(struct thread_data *td,
				      struct fio_file *f,
				      enum zbd_zoned_model *model)
{
	struct znskit_geometry geo;
	int ret;

	if (!fio_file_size_known(f)) {
		ret = znskit_setup_file(td, f);
		if (ret)
			return -ret;
	}
	ret = znskit_fio_geometry(f->file_name, &geo);
	if (ret < 0)
		return ret;
	*model = geo.zoned ? ZBD_HOST_MANAGED : ZBD_NONE;
	return 0;
}

static int fio_znskit_report_zones(struct thread_data *td, struct fio_file *f,
				   uint64_t offset, struct zbd_zone *zones,
				   unsigned int nr_zones)
{
	struct znskit_zone *buf;
	int ret, i;

	buf = calloc(nr_zones ? nr_zones : 1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	ret = znskit_fio_report_zones(td_client(td), f->file_name, offset, buf,
				      nr_zones);
	for (i = 0; i < ret; i++) {
		zones[i].start = buf[i].start_bytes;
		zones[i].wp = buf[i].wp_bytes;
		zones[i].len = buf[i].len_bytes;
		zones[i].capacity = buf[i].capacity_bytes;
		zones[i].type = buf[i].zone_type == 1 ? ZBD_ZONE_TYPE_CNV :
							 ZBD_ZONE_TYPE_SWR;
		zones[i].cond = (enum zbd_zone_cond)buf[i].cond;
	}
	free(buf);
	return ret;
}

static int fio_znskit_reset_wp(struct thread_data *td, struct fio_file *f,
			       uint64_t offset, uint64_t length)
{
	return znskit_fio_zone_range(td_client(td), f->file_name, 0, offset,
				     length);
}

static int fio_znskit_get_max_open_zones(struct thread_data *td,
					 struct fio_file *f,
					 unsigned int *max_open_zones)
{
	struct znskit_geometry geo;
	int ret = znskit_fio_geometry(f->file_name, &geo);

	if (ret < 0)
		return ret;
	*max_open_zones = (unsigned int)geo.max_open_zones;
	return 0;
}

static void __attribute__((constructor)) znskit_fio_ctor(void)
{
	znskit_fio_loaded();
}

static void __attribute__((destructor)) znskit_fio_dtor(void)
{
	znskit_fio_shutdown();
}

struct ioengine_ops ioengine = {
	.name			= "znskit",
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_NOEXTEND |
				  FIO_RAWIO | FIO_MEMALIGN,
	.setup			= fio_znskit_setup,
	.init			= fio_znskit_init,
	.cleanup		= fio_znskit_cleanup,
	.get_file_size		= fio_znskit_get_file_size,
	.open_file		= fio_znskit_open_file,
	.close_file		= fio_znskit_close_file,
	.queue			= fio_znskit_queue,
	.commit			= fio_znskit_commit,
	.getevents		= fio_znskit_getevents,
	.event			= fio_znskit_event,
	.iomem_alloc		= fio_znskit_iomem_alloc,
	.iomem_free		= fio_znskit_iomem_free,
	.get_zoned_model	= fio_znskit_get_zoned_model,
	.report_zones		= fio_znskit_report_zones,
	.reset_wp		= fio_znskit_reset_wp,
	.get_max_open_zones	= fio_znskit_get_max_open_zones,
	.options		= options,
	.option_struct_size	= sizeof(struct znskit_options),
};

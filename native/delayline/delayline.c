/*
 * delayline: a userspace delay line between two TAP devices, for netfleet's lab.
 *
 * The kernel the lab runs on has no netem, so a lab link with delay, jitter or loss is a pair of
 * TAP devices bridged by this program: the host's "eth0" (in the host's namespace) and its switch
 * port "to-HOST" (in the switch namespace, a port of the lab's bridge). netfleet creates both as
 * persistent TAPs with `ip tuntap`, configures them like the veth ends they replace, then starts
 * this program inside the switch namespace; it attaches to the switch port there, enters the
 * host's namespace (--host-netns) to attach to eth0, returns, prints "ready" and forwards:
 *
 *   out: read eth0     -> hold until arrival + delay (+ jitter) -> write to-HOST (host sends)
 *   in:  read to-HOST  -> hold until arrival + delay (+ jitter) -> write eth0    (host receives)
 *
 * One thread per direction. Each direction is a FIFO whose release times never decrease (jitter
 * never reorders: a packet leaves no earlier than the one before it), i.e. a timer-ordered queue.
 * A thread sleeps in ppoll() on its input with a timeout until the head's release time minus
 * --spin, then busy-polls the last --spin nanoseconds on CLOCK_MONOTONIC, still taking input.
 * Packets are read straight into a byte ring (no copy). With virtio-net headers and TAP
 * offloads, TCP's 64 KiB GSO super-packets cross as one read and one write (multi-Gbit/s); a
 * direction with loss turns offloads off, so loss applies per wire-size packet.
 *
 * Arguments (all times in nanoseconds; loss a probability 0..1):
 *   delayline --switch-dev to-HOST --host-netns /run/netns/NS --host-dev eth0
 *             [--out DELAY,JITTER,LOSS] [--in DELAY,JITTER,LOSS]
 *             [--ring BYTES] [--spin NS] [--rt PRIORITY] [--seed N]
 * --rt: SCHED_FIFO priority of the two forwarding threads (default 10; 0 = normal scheduling).
 * They sleep whenever nothing is due, so they take CPU only for traffic and the last --spin ns
 * (default 100000) before each release.
 * Exit: 0 on SIGTERM/SIGINT (counters on stderr), 2 bad arguments, 1 any system error.
 * SIGUSR1 prints the counters to stderr, a line per direction: "out forwarded=N bytes=B lost=N
 *   overflow=N late_max_ns=N late_sum_ns=N late_over_20us=N" (late: release after its time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (65536 + 64) /* a GSO super-packet, its Ethernet header and the vnet header */
#define REC_HDR 16u            /* a record: uint32 length, uint32 pad, uint64 release time */
#define WRAP_MARK 0xffffffffu
#define READ_BATCH 64

struct params {
	uint64_t delay, jitter;
	double loss;
};

struct direction {
	const char *name;
	int in_fd, out_fd;
	struct params p;
	uint8_t *ring, *scratch; /* scratch: where a packet that finds the ring full is read */
	size_t size, head, tail, used; /* byte offsets; used = bytes held, including records */
	uint64_t last_release, rng;
	_Atomic uint64_t forwarded, bytes, lost, overflow, late_ns_max, late_ns_sum, late_20us;
	uint64_t late_hist[8]; /* releases late by <1, <2, <5, <10, <20, <50, <100, >=100 us */
};

static volatile sig_atomic_t stopping;
static uint64_t spin_ns = 100000;
static int rt_priority = 10;

static void die(const char *what)
{
	fprintf(stderr, "delayline: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(const char *msg)
{
	fprintf(stderr, "delayline: %s\n", msg);
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A uniform double in [0, 1). */
static double uniform(uint64_t *s)
{
	return (double)(xorshift(s) >> 11) * (1.0 / 9007199254740992.0);
}

static int tap_attach(const char *dev, int offload)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("open /dev/net/tun");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (strlen(dev) >= IFNAMSIZ)
		usage("device name too long");
	strcpy(ifr.ifr_name, dev);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fprintf(stderr, "delayline: attach to TAP %s: %s\n", dev, strerror(errno));
		exit(1);
	}
	int hdr = sizeof(struct virtio_net_hdr);
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0)
		die("TUNSETVNETHDRSZ");
	/* What the kernel may hand us from this device (its egress): GSO super-packets and
	 * partial checksums, or (offload 0) wire-size frames with checksums done. */
	unsigned long off = offload ? (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) : 0;
	if (ioctl(fd, TUNSETOFFLOAD, off) < 0)
		die("TUNSETOFFLOAD");
	return fd;
}

static int parse_params(const char *s, struct params *p)
{
	char *end;
	errno = 0;
	unsigned long long d = strtoull(s, &end, 10);
	if (errno || *end != ',')
		return -1;
	unsigned long long j = strtoull(end + 1, &end, 10);
	if (errno || *end != ',')
		return -1;
	double l = strtod(end + 1, &end);
	if (*end || !(l >= 0.0 && l <= 1.0) || j > d)
		return -1;
	p->delay = d;
	p->jitter = j;
	p->loss = l;
	return 0;
}

/* Room for one more maximal record at the tail? Wraps the tail to 0 when the end is too short. */
static uint8_t *reserve(struct direction *d)
{
	size_t need = REC_HDR + MAX_FRAME;
	if (d->used == 0)
		d->head = d->tail = 0;
	if (d->tail >= d->head && d->used) {
		if (d->size - d->tail >= need)
			return d->ring + d->tail;
		if (d->head >= need) { /* wrap: mark the rest of the end as unused */
			*(uint32_t *)(d->ring + d->tail) = WRAP_MARK;
			d->used += d->size - d->tail;
			d->tail = 0;
			return d->ring;
		}
		return NULL;
	}
	if (!d->used)
		return d->ring;
	return d->head - d->tail > need ? d->ring + d->tail : NULL; /* never fill it up to head */
}

static void release_due(struct direction *d, uint64_t now)
{
	while (d->used) {
		uint8_t *rec = d->ring + d->head;
		uint32_t len = *(uint32_t *)rec;
		if (len == WRAP_MARK) {
			d->used -= d->size - d->head;
			d->head = 0;
			continue;
		}
		uint64_t release = *(uint64_t *)(rec + 8);
		if (release > now)
			return;
		uint64_t late = now - release;
		if (late > d->late_ns_max)
			d->late_ns_max = late;
		d->late_ns_sum += late;
		if (late > 20000)
			d->late_20us++;
		static const uint64_t edges[7] = {1000, 2000, 5000, 10000, 20000, 50000, 100000};
		int b = 0;
		while (b < 7 && late >= edges[b])
			b++;
		d->late_hist[b]++;
		if (write(d->out_fd, rec + REC_HDR, len) < 0 && errno != EAGAIN && errno != EIO &&
		    errno != EINVAL)
			die("write");
		d->forwarded++;
		d->bytes += len - sizeof(struct virtio_net_hdr);
		size_t step = (REC_HDR + len + 15) & ~(size_t)15;
		d->head += step;
		d->used -= step;
		if (d->head >= d->size)
			d->head = 0;
	}
}

/* Read what is waiting (at most a batch); returns how many packets were read. */
static int take_input(struct direction *d)
{
	int n = 0;
	while (n < READ_BATCH) {
		uint8_t *slot = reserve(d);
		uint8_t *buf = slot ? slot + REC_HDR : d->scratch;
		ssize_t len = read(d->in_fd, buf, MAX_FRAME);
		if (len < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (errno == EBADFD || errno == EIO) /* the device went away: lab down */
				exit(0);
			die("read");
		}
		n++;
		uint64_t arrival = now_ns();
		if (!slot) {
			d->overflow++;
			continue;
		}
		if (d->p.loss > 0 && uniform(&d->rng) < d->p.loss) {
			d->lost++;
			continue;
		}
		uint64_t delay = d->p.delay;
		if (d->p.jitter)
			delay = delay - d->p.jitter + (uint64_t)(uniform(&d->rng) * 2.0 * (double)d->p.jitter);
		uint64_t release = arrival + delay;
		if (release < d->last_release)
			release = d->last_release; /* never reorder */
		d->last_release = release;
		*(uint32_t *)slot = (uint32_t)len;
		*(uint64_t *)(slot + 8) = release;
		size_t step = (REC_HDR + (size_t)len + 15) & ~(size_t)15;
		d->tail += step;
		d->used += step;
		if (d->tail >= d->size)
			d->tail = 0;
	}
	return n;
}

static uint64_t head_release(struct direction *d)
{
	if (!d->used)
		return UINT64_MAX;
	size_t h = d->head;
	if (*(uint32_t *)(d->ring + h) == WRAP_MARK)
		h = 0;
	return *(uint64_t *)(d->ring + h + 8);
}

static void *forward(void *arg)
{
	struct direction *d = arg;
	prctl(PR_SET_TIMERSLACK, 1UL); /* wake at the asked time, not up to 50 us later */
	if (rt_priority > 0) { /* wake on time on a busy machine; best effort (needs root) */
		struct sched_param sp = {.sched_priority = rt_priority};
		pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	}
	sigset_t none;
	sigemptyset(&none);
	struct pollfd pfd = {.fd = d->in_fd, .events = POLLIN};
	while (!stopping) {
		uint64_t now = now_ns();
		release_due(d, now);
		if (take_input(d) == READ_BATCH)
			continue; /* more waiting: keep going, releasing between batches */
		uint64_t next = head_release(d);
		now = now_ns();
		if (next <= now)
			continue;
		uint64_t wait = next - now;
		if (wait <= spin_ns)
			continue; /* busy-poll the last stretch: input and clock */
		struct timespec ts, *tsp = NULL;
		if (next != UINT64_MAX) {
			wait -= spin_ns;
			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tsp = &ts;
		}
		if (ppoll(&pfd, 1, tsp, NULL) < 0 && errno != EINTR)
			die("ppoll");
	}
	return NULL;
}

static struct direction dirs[2];

static void report(void)
{
	for (int i = 0; i < 2; i++) {
		struct direction *d = &dirs[i];
		fprintf(stderr,
			"%s forwarded=%" PRIu64 " bytes=%" PRIu64 " lost=%" PRIu64 " overflow=%" PRIu64
			" late_max_ns=%" PRIu64 " late_sum_ns=%" PRIu64 " late_over_20us=%" PRIu64 "\n",
			d->name, (uint64_t)d->forwarded, (uint64_t)d->bytes, (uint64_t)d->lost,
			(uint64_t)d->overflow, (uint64_t)d->late_ns_max, (uint64_t)d->late_ns_sum,
			(uint64_t)d->late_20us);
		fprintf(stderr, "%s late_hist_us <1:%" PRIu64 " <2:%" PRIu64 " <5:%" PRIu64 " <10:%" PRIu64
			" <20:%" PRIu64 " <50:%" PRIu64 " <100:%" PRIu64 " more:%" PRIu64 "\n", d->name,
			d->late_hist[0], d->late_hist[1], d->late_hist[2], d->late_hist[3],
			d->late_hist[4], d->late_hist[5], d->late_hist[6], d->late_hist[7]);
	}
}

int main(int argc, char **argv)
{
	const char *switch_dev = NULL, *host_netns = NULL, *host_dev = "eth0";
	size_t ring = 64u << 20;
	uint64_t seed = 0x9e3779b97f4a7c15u;
	dirs[0].name = "out";
	dirs[1].name = "in";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage("every option takes a value");
		const char *v = argv[++i];
		if (!strcmp(a, "--switch-dev"))
			switch_dev = v;
		else if (!strcmp(a, "--host-netns"))
			host_netns = v;
		else if (!strcmp(a, "--host-dev"))
			host_dev = v;
		else if (!strcmp(a, "--out") || !strcmp(a, "--in")) {
			if (parse_params(v, &dirs[a[2] == 'o' ? 0 : 1].p))
				usage("--out/--in take DELAY_NS,JITTER_NS,LOSS (jitter <= delay, 0 <= loss <= 1)");
		} else if (!strcmp(a, "--ring"))
			ring = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--spin"))
			spin_ns = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--rt"))
			rt_priority = atoi(v);
		else if (!strcmp(a, "--seed"))
			seed = strtoull(v, NULL, 10) | 1;
		else
			usage("unknown option (see the comment at the top of delayline.c)");
	}
	if (!switch_dev || !host_netns)
		usage("--switch-dev and --host-netns are required");
	if (ring < 4 * (REC_HDR + MAX_FRAME))
		usage("--ring is too small (at least 264 KiB)");

	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0)
		die("open /proc/self/ns/net");
	/* out reads eth0 (host side): offload unless that direction drops packets. */
	int sw = tap_attach(switch_dev, dirs[1].p.loss == 0);
	int hostns = open(host_netns, O_RDONLY | O_CLOEXEC);
	if (hostns < 0)
		die(host_netns);
	if (setns(hostns, CLONE_NEWNET) < 0)
		die("setns into the host namespace");
	int host = tap_attach(host_dev, dirs[0].p.loss == 0);
	if (setns(home, CLONE_NEWNET) < 0)
		die("setns back");
	close(hostns);
	close(home);

	dirs[0].in_fd = host;
	dirs[0].out_fd = sw;
	dirs[1].in_fd = sw;
	dirs[1].out_fd = host;
	for (int i = 0; i < 2; i++) {
		struct direction *d = &dirs[i];
		d->size = ring & ~(size_t)15;
		d->ring = mmap(NULL, d->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (d->ring == MAP_FAILED)
			die("mmap");
		d->scratch = malloc(MAX_FRAME);
		if (!d->scratch)
			die("malloc");
		d->rng = seed + (uint64_t)i * 0x2545f4914f6cdd1du;
	}
	int flags = fcntl(sw, F_GETFL);
	fcntl(sw, F_SETFL, flags | O_NONBLOCK);
	flags = fcntl(host, F_GETFL);
	fcntl(host, F_SETFL, flags | O_NONBLOCK);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* threads inherit: only main takes signals */
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if ((errno = pthread_create(&t[i], NULL, forward, &dirs[i])))
			die("pthread_create");
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int sig;
		if (sigwait(&set, &sig))
			continue;
		report();
		if (sig != SIGUSR1)
			break;
	}
	stopping = 1;
	return 0;
}

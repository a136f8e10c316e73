// aqmlab-ns3: runs one scenario, described in JSON by aqmlab.ns3.translate, on ns-3.44 and
// writes what aqmlab.ns3.engine needs to build an aqmlab Result.
//
//   usage: aqmlab-ns3 JOB.json OUTDIR
//
// The JSON names ns-3 types and attributes directly (queue discs and their attributes, TCP
// congestion and recovery types, socket attributes), so this program only builds what it is
// told: point-to-point links between nodes, one root queue disc per link direction, global
// routing, and per flow a sender and a receiver application of its own (below). It writes
// OUTDIR/result.json (counters, per-bin series, probe samples) and, per measured queue,
// OUTDIR/sojourn.N.f64: the sojourn time (s, little-endian doubles) of every packet the root
// queue disc of queue N dequeued after the warm-up (its "SojournTime" trace).
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ns3;

// ---------------------------------------------------------------------------------------
// a small JSON reader (objects, arrays, strings, numbers, true/false/null)

struct Json
{
    enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
    bool b = false;
    double num = 0;
    std::string str;
    std::vector<Json> arr;
    std::vector<std::pair<std::string, Json>> obj;

    const Json& operator[](const std::string& k) const
    {
        for (auto& [key, v] : obj)
            if (key == k)
                return v;
        throw std::runtime_error("missing key '" + k + "'");
    }
    bool has(const std::string& k) const
    {
        for (auto& kv : obj)
            if (kv.first == k)
                return true;
        return false;
    }
    double d() const { return num; }
    uint64_t u() const { return (uint64_t)std::llround(num); }
};

class JsonParser
{
  public:
    explicit JsonParser(const std::string& s) : m_s(s) {}
    Json Parse()
    {
        Json v = Value();
        Ws();
        if (m_i != m_s.size())
            Fail("trailing characters");
        return v;
    }

  private:
    const std::string& m_s;
    size_t m_i = 0;
    [[noreturn]] void Fail(const std::string& what)
    {
        throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(m_i));
    }
    void Ws()
    {
        while (m_i < m_s.size() && std::isspace((unsigned char)m_s[m_i]))
            m_i++;
    }
    char Peek()
    {
        Ws();
        if (m_i >= m_s.size())
            Fail("unexpected end");
        return m_s[m_i];
    }
    void Expect(char c)
    {
        if (Peek() != c)
            Fail(std::string("expected '") + c + "'");
        m_i++;
    }
    std::string String()
    {
        Expect('"');
        std::string out;
        while (m_i < m_s.size() && m_s[m_i] != '"')
        {
            char c = m_s[m_i++];
            if (c == '\\')
            {
                if (m_i >= m_s.size())
                    Fail("bad escape");
                char e = m_s[m_i++];
                switch (e)
                {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'u':
                    // only ASCII escapes are produced by the translation
                    out += (char)std::stoi(m_s.substr(m_i, 4), nullptr, 16);
                    m_i += 4;
                    break;
                default: out += e;
                }
            }
            else
                out += c;
        }
        Expect('"');
        return out;
    }
    Json Value()
    {
        Json v;
        char c = Peek();
        if (c == '{')
        {
            v.kind = Json::Obj;
            m_i++;
            if (Peek() == '}')
            {
                m_i++;
                return v;
            }
            while (true)
            {
                std::string k = String();
                Expect(':');
                v.obj.emplace_back(k, Value());
                if (Peek() == ',')
                {
                    m_i++;
                    continue;
                }
                Expect('}');
                return v;
            }
        }
        if (c == '[')
        {
            v.kind = Json::Arr;
            m_i++;
            if (Peek() == ']')
            {
                m_i++;
                return v;
            }
            while (true)
            {
                v.arr.push_back(Value());
                if (Peek() == ',')
                {
                    m_i++;
                    continue;
                }
                Expect(']');
                return v;
            }
        }
        if (c == '"')
        {
            v.kind = Json::Str;
            v.str = String();
            return v;
        }
        if (m_s.compare(m_i, 4, "true") == 0)
        {
            v.kind = Json::Bool;
            v.b = true;
            m_i += 4;
            return v;
        }
        if (m_s.compare(m_i, 5, "false") == 0)
        {
            v.kind = Json::Bool;
            m_i += 5;
            return v;
        }
        if (m_s.compare(m_i, 4, "null") == 0)
        {
            m_i += 4;
            return v;
        }
        size_t end = 0;
        v.kind = Json::Num;
        v.num = std::stod(m_s.substr(m_i, 40), &end);
        if (end == 0)
            Fail("bad value");
        m_i += end;
        return v;
    }
};

static void SetAttrs(ObjectBase* o, const Json& attrs)
{
    for (auto& [k, v] : attrs.obj)
        o->SetAttribute(k, StringValue(v.str));
}

// ---------------------------------------------------------------------------------------
// run-wide measurement settings

static double g_warmup = 0;
static double g_duration = 0;
static double g_bin = 0.2;
static size_t g_nbins = 1;

static size_t Bin(double t)
{
    size_t k = (size_t)std::floor(t / g_bin);
    return k < g_nbins ? k : g_nbins - 1;
}

// ---------------------------------------------------------------------------------------
// queues: the root queue disc of one link direction

struct QueueMeter
{
    Ptr<QueueDisc> qd;
    uint64_t rateBps = 0;
    std::vector<double> sojourn;  // after the warm-up
    std::vector<double> binTxBytes, binDrops, binBacklogMax, binSojSum, binSojN;
    uint64_t txPktsWarm = 0, txBytesWarm = 0;  // IP bytes after the warm-up (PhyTxEnd minus PPP)
    QueueDisc::Stats warmStats;
    bool warmTaken = false;

    void Init()
    {
        binTxBytes.assign(g_nbins, 0);
        binDrops.assign(g_nbins, 0);
        binBacklogMax.assign(g_nbins, 0);
        binSojSum.assign(g_nbins, 0);
        binSojN.assign(g_nbins, 0);
    }
    // the last sojourn sample, taken back when that packet is dropped after its dequeue
    int64_t lastSojNs = -1;
    double lastSoj = 0;
    bool lastKept = false;

    void OnSojourn(Time t)
    {
        double now = Simulator::Now().GetSeconds();
        size_t k = Bin(now);
        binSojSum[k] += t.GetSeconds();
        binSojN[k] += 1;
        lastSojNs = Simulator::Now().GetNanoSeconds();
        lastSoj = t.GetSeconds();
        lastKept = now >= g_warmup;
        if (lastKept)
            sojourn.push_back(t.GetSeconds());
    }
    // ns-3 fires SojournTime when a packet leaves the internal queue, also for one the AQM
    // then drops (CoDel's head drops): the simulator's sojourn is over transmitted packets,
    // so the sample of a packet dropped after dequeue, just taken, is removed
    void OnDropAfterDequeue(Ptr<const QueueDiscItem>, const char*)
    {
        if (lastSojNs != Simulator::Now().GetNanoSeconds())
            return;
        size_t k = Bin(Simulator::Now().GetSeconds());
        binSojSum[k] -= lastSoj;
        binSojN[k] -= 1;
        if (lastKept && !sojourn.empty())
            sojourn.pop_back();
        lastSojNs = -1;
    }
    void OnTx(Ptr<const Packet> p)
    {
        double now = Simulator::Now().GetSeconds();
        uint32_t ip = p->GetSize() >= 2 ? p->GetSize() - 2 : 0;  // PPP header
        binTxBytes[Bin(now)] += ip;
        if (now >= g_warmup)
        {
            txPktsWarm++;
            txBytesWarm += ip;
        }
    }
    void OnDrop(Ptr<const QueueDiscItem>) { binDrops[Bin(Simulator::Now().GetSeconds())] += 1; }
    void OnDropReason(Ptr<const QueueDiscItem>, const char*) { OnDrop(nullptr); }
    void OnBacklog(uint32_t, uint32_t n)
    {
        size_t k = Bin(Simulator::Now().GetSeconds());
        if (n > binBacklogMax[k])
            binBacklogMax[k] = n;
    }
    void TakeWarm()
    {
        warmStats = qd->GetStats();
        warmTaken = true;
    }
};

// ---------------------------------------------------------------------------------------
// a tag carrying a probe's or datagram's sequence number and send time

class ProbeTag : public Tag
{
  public:
    uint32_t seq = 0;
    int64_t sentNs = 0;
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("aqmlab::ProbeTag").SetParent<Tag>().AddConstructor<ProbeTag>();
        return tid;
    }
    TypeId GetInstanceTypeId() const override { return GetTypeId(); }
    uint32_t GetSerializedSize() const override { return 12; }
    void Serialize(TagBuffer b) const override
    {
        b.WriteU32(seq);
        b.WriteU64((uint64_t)sentNs);
    }
    void Deserialize(TagBuffer b) override
    {
        seq = b.ReadU32();
        sentNs = (int64_t)b.ReadU64();
    }
    void Print(std::ostream& os) const override { os << "seq=" << seq; }
};

// ---------------------------------------------------------------------------------------
// flows

struct FlowMeter
{
    std::string kind;
    double start = 0, stop = 0;
    double winFrom = 0, winTo = 0;  // goodput window: [max(start, warmup), min(stop, duration)]
    std::vector<double> binRx;      // application bytes received per bin
    uint64_t rxTotal = 0, rxWin = 0, txBytes = 0, txPkts = 0, rxPkts = 0;
    uint64_t target = 0;  // bulk: bytes to send (0: unlimited)
    double completion = -1;
    uint32_t recoveries = 0, rtos = 0;
    std::vector<std::pair<uint32_t, double>> rtt;  // (sequence number, RTT) of each probe reply
    std::vector<double> owd;                      // cbr: one-way delay of each datagram after the warm-up
    bool recordDelay = false;                     // cbr: every datagram's (arrival, one-way delay)
    std::vector<std::pair<double, double>> owdAll;
    uint64_t sentWarm = 0, rxWarm = 0;            // cbr datagrams / probes sent after the warm-up, and received of those
    std::vector<int64_t> sentNs;                  // probes: send time by sequence number
    std::vector<std::pair<double, double>> trCwnd, trSsthresh, trSrtt;  // traced bulk senders

    void OnCwnd(uint32_t, uint32_t v) { trCwnd.emplace_back(Simulator::Now().GetSeconds(), v); }
    void OnSsthresh(uint32_t, uint32_t v)
    {
        if (v < (1u << 31))  // ns-3's initial ssthresh is "infinite" (UINT32_MAX)
            trSsthresh.emplace_back(Simulator::Now().GetSeconds(), v);
    }
    void OnSrtt(Time, Time v) { trSrtt.emplace_back(Simulator::Now().GetSeconds(), v.GetSeconds()); }

    void Init() { binRx.assign(g_nbins, 0); }
    void Rx(uint32_t n)
    {
        double now = Simulator::Now().GetSeconds();
        binRx[Bin(now)] += n;
        rxTotal += n;
        if (now >= winFrom && now <= winTo)
            rxWin += n;
        if (target && completion < 0 && rxTotal >= target)
            completion = now - start;
    }
    void CongState(TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to)
    {
        if (from == to)
            return;
        if (to == TcpSocketState::CA_RECOVERY)
            recoveries++;
        else if (to == TcpSocketState::CA_LOSS)
            rtos++;
    }
};

static Ptr<Socket> MakeTcpSocket(Ptr<Node> node, const Json& f, const char* attrsKey)
{
    Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(f["pacing"].b));
    Ptr<TcpL4Protocol> tcp = node->GetObject<TcpL4Protocol>();
    Ptr<Socket> s = tcp->CreateSocket(TypeId::LookupByName(f["cc"].str), TypeId::LookupByName(f["recovery"].str));
    SetAttrs(PeekPointer(s), f[attrsKey]);
    return s;
}

class BulkSender : public Application
{
  public:
    BulkSender(FlowMeter* m, const Json* f, Address peer) : m_m(m), m_f(f), m_peer(peer) {}

  private:
    FlowMeter* m_m;
    const Json* m_f;
    Address m_peer;
    Ptr<Socket> m_sock;
    bool m_connected = false, m_closed = false;
    uint64_t m_sentData = 0;  // data bytes TCP has sent at least once (HighestSequence - 1)
    // Written but not yet sent bytes are kept below this, so that the flow stops soon after
    // its stop time instead of draining a send buffer sized for the window (the sockets'
    // SndBufSize holds the whole window, in flight included). Every new ACK refills it
    // (the socket's send callback) before TCP sends more.
    static constexpr uint64_t UNSENT_MAX = 256 * 1024;

    void StartApplication() override
    {
        m_sock = MakeTcpSocket(GetNode(), *m_f, "snd_attrs");
        m_sock->TraceConnectWithoutContext("CongState", MakeCallback(&FlowMeter::CongState, m_m));
        if (!m_sock->TraceConnectWithoutContext("HighestSequence", MakeCallback(&BulkSender::Highest, this)))
        {
            std::fprintf(stderr, "aqmlab-ns3: the TCP socket has no HighestSequence trace\n");
            std::exit(3);
        }
        if ((*m_f)["trace"].b &&
            !(m_sock->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&FlowMeter::OnCwnd, m_m)) &&
              m_sock->TraceConnectWithoutContext("SlowStartThreshold", MakeCallback(&FlowMeter::OnSsthresh, m_m)) &&
              m_sock->TraceConnectWithoutContext("RTT", MakeCallback(&FlowMeter::OnSrtt, m_m))))
        {
            std::fprintf(stderr, "aqmlab-ns3: the TCP socket lacks a CongestionWindow, SlowStartThreshold or RTT trace\n");
            std::exit(3);
        }
        m_sock->Bind();
        m_sock->SetConnectCallback(MakeCallback(&BulkSender::Connected, this), MakeCallback(&BulkSender::Failed, this));
        m_sock->SetSendCallback(MakeCallback(&BulkSender::Space, this));
        m_sock->Connect(m_peer);
    }
    void StopApplication() override { m_closed = true; }
    void Connected(Ptr<Socket>)
    {
        m_connected = true;
        Fill();
    }
    void Failed(Ptr<Socket>) {}
    void Highest(SequenceNumber32, SequenceNumber32 high)
    {
        // the SYN takes sequence number 0 (ns-3's initial sequence number): data starts at 1
        uint64_t sent = high.GetValue() > 0 ? high.GetValue() - 1 : 0;
        if (sent > m_sentData)
            m_sentData = sent;
    }
    void Space(Ptr<Socket>, uint32_t)
    {
        if (m_connected)
            Fill();
    }
    void Fill()
    {
        while (!m_closed)
        {
            uint64_t left = m_m->target ? m_m->target - m_m->txBytes : UINT64_MAX;
            uint64_t unsent = m_m->txBytes > m_sentData ? m_m->txBytes - m_sentData : 0;
            if (unsent >= UNSENT_MAX)
                break;
            uint32_t n = (uint32_t)std::min<uint64_t>({left, (uint64_t)m_sock->GetTxAvailable(), UNSENT_MAX - unsent, 65536});
            if (n == 0)
                break;
            int r = m_sock->Send(Create<Packet>(n));
            if (r <= 0)
                break;
            m_m->txBytes += r;
        }
        if (m_m->target && m_m->txBytes >= m_m->target && !m_closed)
        {
            m_closed = true;
            m_sock->Close();
        }
    }
};

class BulkReceiver : public Application
{
  public:
    BulkReceiver(FlowMeter* m, const Json* f, uint16_t port) : m_m(m), m_f(f), m_port(port) {}

  private:
    FlowMeter* m_m;
    const Json* m_f;
    uint16_t m_port;
    Ptr<Socket> m_listen;
    std::vector<Ptr<Socket>> m_conns;

    void StartApplication() override
    {
        m_listen = MakeTcpSocket(GetNode(), *m_f, "rcv_attrs");
        m_listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_listen->Listen();
        m_listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                    MakeCallback(&BulkReceiver::Accept, this));
    }
    void StopApplication() override {}
    void Accept(Ptr<Socket> s, const Address&)
    {
        m_conns.push_back(s);
        s->SetRecvCallback(MakeCallback(&BulkReceiver::Read, this));
    }
    void Read(Ptr<Socket> s)
    {
        while (Ptr<Packet> p = s->Recv())
        {
            if (p->GetSize() == 0)
                break;
            m_m->Rx(p->GetSize());
        }
    }
};

// UDP constant bit rate: one datagram of `payload` bytes every `gap` seconds
class CbrSender : public Application
{
  public:
    CbrSender(FlowMeter* m, Address peer, uint32_t payload, double gap) : m_m(m), m_peer(peer), m_payload(payload), m_gap(gap) {}

  private:
    FlowMeter* m_m;
    Address m_peer;
    uint32_t m_payload;
    double m_gap;
    uint32_t m_seq = 0;
    Ptr<Socket> m_sock;
    EventId m_next;

    void StartApplication() override
    {
        m_sock = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_sock->Bind();
        m_sock->Connect(m_peer);
        Send();
    }
    void StopApplication() override { m_next.Cancel(); }
    void Send()
    {
        Ptr<Packet> p = Create<Packet>(m_payload);
        ProbeTag tag;
        tag.seq = m_seq++;
        tag.sentNs = Simulator::Now().GetNanoSeconds();
        p->AddPacketTag(tag);
        m_sock->Send(p);
        m_m->txPkts++;
        m_m->txBytes += m_payload;
        if (Simulator::Now().GetSeconds() >= g_warmup)
            m_m->sentWarm++;
        m_next = Simulator::Schedule(Seconds(m_gap), &CbrSender::Send, this);
    }
};

class CbrReceiver : public Application
{
  public:
    CbrReceiver(FlowMeter* m, uint16_t port) : m_m(m), m_port(port) {}

  private:
    FlowMeter* m_m;
    uint16_t m_port;
    Ptr<Socket> m_sock;

    void StartApplication() override
    {
        m_sock = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_sock->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_sock->SetRecvCallback(MakeCallback(&CbrReceiver::Read, this));
    }
    void StopApplication() override {}
    void Read(Ptr<Socket> s)
    {
        while (Ptr<Packet> p = s->Recv())
        {
            ProbeTag tag;
            m_m->rxPkts++;
            m_m->Rx(p->GetSize());
            if (p->PeekPacketTag(tag))
            {
                double sent = tag.sentNs * 1e-9;
                if (m_m->recordDelay)
                    m_m->owdAll.emplace_back(Simulator::Now().GetSeconds(), Simulator::Now().GetSeconds() - sent);
                if (sent >= g_warmup)
                {
                    m_m->rxWarm++;
                    m_m->owd.push_back(Simulator::Now().GetSeconds() - sent);
                }
            }
        }
    }
};

// latency probe: a UDP request of the probe's IP size every `interval`, echoed by ProbeEcho
class ProbeClient : public Application
{
  public:
    ProbeClient(FlowMeter* m, Address peer, uint32_t payload, double interval) : m_m(m), m_peer(peer), m_payload(payload), m_interval(interval) {}

  private:
    FlowMeter* m_m;
    Address m_peer;
    uint32_t m_payload;
    double m_interval;
    uint32_t m_seq = 0;
    Ptr<Socket> m_sock;
    EventId m_next;

    void StartApplication() override
    {
        m_sock = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_sock->Bind();
        m_sock->Connect(m_peer);
        m_sock->SetRecvCallback(MakeCallback(&ProbeClient::Read, this));
        Send();
    }
    void StopApplication() override { m_next.Cancel(); }
    void Send()
    {
        Ptr<Packet> p = Create<Packet>(m_payload);
        ProbeTag tag;
        tag.seq = m_seq++;
        tag.sentNs = Simulator::Now().GetNanoSeconds();
        p->AddPacketTag(tag);
        m_sock->Send(p);
        m_m->sentNs.push_back(tag.sentNs);
        m_m->txPkts++;
        m_next = Simulator::Schedule(Seconds(m_interval), &ProbeClient::Send, this);
    }
    void Read(Ptr<Socket> s)
    {
        while (Ptr<Packet> p = s->Recv())
        {
            ProbeTag tag;
            if (!p->PeekPacketTag(tag))
                continue;
            m_m->rxPkts++;
            double now = Simulator::Now().GetSeconds();
            m_m->rtt.emplace_back(tag.seq, now - tag.sentNs * 1e-9);
        }
    }
};

class ProbeEcho : public Application
{
  public:
    explicit ProbeEcho(uint16_t port) : m_port(port) {}

  private:
    uint16_t m_port;
    Ptr<Socket> m_sock;

    void StartApplication() override
    {
        m_sock = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_sock->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_sock->SetRecvCallback(MakeCallback(&ProbeEcho::Read, this));
    }
    void StopApplication() override {}
    void Read(Ptr<Socket> s)
    {
        Address from;
        while (Ptr<Packet> p = s->RecvFrom(from))
            s->SendTo(p, 0, from);
    }
};

// ---------------------------------------------------------------------------------------
// output

static void WriteStats(std::ostream& o, const QueueDisc::Stats& s)
{
    auto map = [&](const char* name, const auto& m) {
        o << ",\"" << name << "\":{";
        bool first = true;
        for (auto& [k, v] : m)
        {
            o << (first ? "" : ",") << "\"" << k << "\":" << v;
            first = false;
        }
        o << "}";
    };
    o << "{\"received\":" << s.nTotalReceivedPackets << ",\"dropped\":" << s.nTotalDroppedPackets
      << ",\"dropped_before_enqueue\":" << s.nTotalDroppedPacketsBeforeEnqueue
      << ",\"dropped_after_dequeue\":" << s.nTotalDroppedPacketsAfterDequeue
      << ",\"dequeued\":" << s.nTotalDequeuedPackets << ",\"sent\":" << s.nTotalSentPackets
      << ",\"requeued\":" << s.nTotalRequeuedPackets << ",\"marked\":" << s.nTotalMarkedPackets;
    map("drops_before", s.nDroppedPacketsBeforeEnqueue);
    map("drops_after", s.nDroppedPacketsAfterDequeue);
    map("marks", s.nMarkedPackets);
    o << "}";
}

static void WriteArr(std::ostream& o, const char* name, const std::vector<double>& v)
{
    o << "\"" << name << "\":[";
    for (size_t i = 0; i < v.size(); i++)
        o << (i ? "," : "") << v[i];
    o << "]";
}

int main(int argc, char* argv[])
{
    if (argc != 3)
    {
        std::fprintf(stderr, "usage: aqmlab-ns3 JOB.json OUTDIR\n");
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in)
    {
        std::fprintf(stderr, "aqmlab-ns3: cannot read %s\n", argv[1]);
        return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    std::string outDir = argv[2];
    Json job;
    try
    {
        job = JsonParser(text).Parse();
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "aqmlab-ns3: %s\n", e.what());
        return 2;
    }

    g_duration = job["duration"].d();
    g_warmup = job["warmup"].d();
    g_bin = job["bin"].d();
    g_nbins = std::max<size_t>(1, (size_t)std::ceil(g_duration / g_bin - 1e-9));
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(job["seed"].u());
    for (auto& [k, v] : job["defaults"].obj)
        Config::SetDefault(k, StringValue(v.str));

    // nodes and links
    NodeContainer nodes;
    nodes.Create(job["nodes"].arr.size());
    InternetStackHelper stack;
    stack.InstallAll();
    std::vector<Ipv4Address> nodeAddr(nodes.GetN());
    std::vector<bool> hasAddr(nodes.GetN(), false);
    std::vector<QueueMeter> queues(job["queues"].arr.size());
    Ipv4AddressHelper addr;
    size_t li = 0;
    for (const Json& l : job["links"].arr)
    {
        PointToPointHelper p2p;
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(l["delay"].d())));
        NodeContainer pair(nodes.Get(l["a"].u()), nodes.Get(l["b"].u()));
        NetDeviceContainer devs = p2p.Install(pair);
        const char* dirs[2] = {"ab", "ba"};
        for (int d = 0; d < 2; d++)
        {
            const Json& side = l[dirs[d]];
            Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(devs.Get(d));
            dev->SetAttribute("DataRate", DataRateValue(DataRate(side["rate_bps"].u())));
            dev->GetQueue()->SetAttribute("MaxSize", StringValue(side["device_queue"].str));
            if (side["loss"].d() > 0)
            {
                // wire loss of this direction: an error model on the receiving device
                Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
                em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
                em->SetAttribute("ErrorRate", DoubleValue(side["loss"].d()));
                devs.Get(1 - d)->SetAttribute("ReceiveErrorModel", PointerValue(em));
            }
        }
        for (int d = 0; d < 2; d++)
        {
            const Json& q = l[dirs[d]]["qdisc"];
            TrafficControlHelper tch;
            tch.SetRootQueueDisc(q["type"].str);
            QueueDiscContainer qdc = tch.Install(devs.Get(d));
            Ptr<QueueDisc> qd = qdc.Get(0);
            SetAttrs(PeekPointer(qd), q["attrs"]);
            int64_t qi = (int64_t)l[dirs[d]]["queue"].d();
            if (qi >= 0)
            {
                QueueMeter& m = queues[qi];
                m.qd = qd;
                m.rateBps = l[dirs[d]]["rate_bps"].u();
                m.Init();
                qd->TraceConnectWithoutContext("SojournTime", MakeCallback(&QueueMeter::OnSojourn, &m));
                qd->TraceConnectWithoutContext("Drop", MakeCallback(&QueueMeter::OnDrop, &m));
                qd->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&QueueMeter::OnDropAfterDequeue, &m));
                qd->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&QueueMeter::OnBacklog, &m));
                devs.Get(d)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&QueueMeter::OnTx, &m));
            }
        }
        // a /30 per link: 10.(1 + k / 16384).(k / 64 % 256).(k % 64 * 4)
        char base[32];
        std::snprintf(base, sizeof base, "10.%zu.%zu.%zu", 1 + li / 16384, (li / 64) % 256, (li % 64) * 4);
        addr.SetBase(base, "255.255.255.252");
        Ipv4InterfaceContainer ifs = addr.Assign(devs);
        for (int d = 0; d < 2; d++)
        {
            uint64_t n = d == 0 ? l["a"].u() : l["b"].u();
            if (!hasAddr[n])
            {
                nodeAddr[n] = ifs.GetAddress(d);
                hasAddr[n] = true;
            }
        }
        li++;
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    // hosts do not forward (as in the simulator); set after the routes are computed, which
    // need every node's link records
    for (size_t n = 0; n < nodes.GetN(); n++)
        if (!job["forward"].arr[n].b)
            nodes.Get(n)->GetObject<Ipv4>()->SetAttribute("IpForward", BooleanValue(false));

    // flows
    std::vector<std::unique_ptr<FlowMeter>> flows;
    uint16_t port = 5000;
    for (const Json& f : job["flows"].arr)
    {
        auto m = std::make_unique<FlowMeter>();
        m->kind = f["kind"].str;
        m->start = f["start"].d();
        m->stop = f["stop"].d();
        m->winFrom = std::max(m->start, g_warmup);
        m->winTo = std::min(m->stop, g_duration);
        m->Init();
        Ptr<Node> src = nodes.Get(f["src"].u());
        Ptr<Node> dst = nodes.Get(f["dst"].u());
        Address peer = InetSocketAddress(nodeAddr[f["dst"].u()], port);
        Ptr<Application> snd, rcv;
        if (m->kind == "bulk")
        {
            m->target = f["bytes"].u();
            snd = CreateObject<BulkSender>(m.get(), &f, peer);
            rcv = CreateObject<BulkReceiver>(m.get(), &f, port);
        }
        else if (m->kind == "cbr")
        {
            uint32_t size = f["size"].u();
            m->recordDelay = f["record_delay"].b;
            snd = CreateObject<CbrSender>(m.get(), peer, size - 28, size * 8.0 / f["rate_bps"].d());
            rcv = CreateObject<CbrReceiver>(m.get(), port);
        }
        else
        {
            snd = CreateObject<ProbeClient>(m.get(), peer, f["size"].u() - 28, f["interval"].d());
            rcv = CreateObject<ProbeEcho>(port);
        }
        dst->AddApplication(rcv);
        rcv->SetStartTime(Seconds(0));
        src->AddApplication(snd);
        snd->SetStartTime(Seconds(m->start));
        snd->SetStopTime(Seconds(std::min(m->stop, g_duration)));
        flows.push_back(std::move(m));
        port++;
    }

    if (g_warmup > 0)
        for (auto& q : queues)
            Simulator::Schedule(Seconds(g_warmup), &QueueMeter::TakeWarm, &q);
    Simulator::Stop(Seconds(g_duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::ofstream o(outDir + "/result.json");
    o.precision(17);
    o << "{\"wall_seconds\":" << wall << ",\"events\":" << Simulator::GetEventCount() << ",\"queues\":[";
    for (size_t i = 0; i < queues.size(); i++)
    {
        QueueMeter& q = queues[i];
        o << (i ? "," : "") << "{\"end\":";
        WriteStats(o, q.qd->GetStats());
        o << ",\"warm\":";
        if (q.warmTaken)
            WriteStats(o, q.warmStats);
        else
            o << "null";
        o << ",\"backlog_end\":" << q.qd->GetNPackets() << ",\"tx_pkts_warm\":" << q.txPktsWarm
          << ",\"tx_bytes_warm\":" << q.txBytesWarm << ",\"sojourn_n\":" << q.sojourn.size() << ",";
        WriteArr(o, "bin_tx_bytes", q.binTxBytes);
        o << ",";
        WriteArr(o, "bin_drops", q.binDrops);
        o << ",";
        WriteArr(o, "bin_backlog_max", q.binBacklogMax);
        o << ",";
        WriteArr(o, "bin_sojourn_sum", q.binSojSum);
        o << ",";
        WriteArr(o, "bin_sojourn_n", q.binSojN);
        o << "}";
        std::ofstream sj(outDir + "/sojourn." + std::to_string(i) + ".f64", std::ios::binary);
        sj.write(reinterpret_cast<const char*>(q.sojourn.data()), q.sojourn.size() * sizeof(double));
    }
    o << "],\"flows\":[";
    for (size_t i = 0; i < flows.size(); i++)
    {
        FlowMeter& f = *flows[i];
        o << (i ? "," : "") << "{\"rx_total\":" << f.rxTotal << ",\"rx_window\":" << f.rxWin << ",\"tx_bytes\":" << f.txBytes
          << ",\"tx_pkts\":" << f.txPkts << ",\"rx_pkts\":" << f.rxPkts << ",\"sent_warm\":" << f.sentWarm
          << ",\"rx_warm\":" << f.rxWarm << ",\"completion\":" << f.completion << ",\"recoveries\":" << f.recoveries
          << ",\"rtos\":" << f.rtos << ",";
        WriteArr(o, "bin_rx", f.binRx);
        o << ",";
        WriteArr(o, "owd", f.owd);
        std::vector<double> sent;
        for (int64_t ns : f.sentNs)
            sent.push_back(ns * 1e-9);
        o << ",";
        WriteArr(o, "probe_sent", sent);
        auto pairs = [&](const char* name, const std::vector<std::pair<double, double>>& v) {
            o << ",\"" << name << "\":[";
            for (size_t k = 0; k < v.size(); k++)
                o << (k ? "," : "") << "[" << v[k].first << "," << v[k].second << "]";
            o << "]";
        };
        pairs("tr_cwnd", f.trCwnd);
        pairs("tr_ssthresh", f.trSsthresh);
        pairs("tr_srtt", f.trSrtt);
        pairs("owd_samples", f.owdAll);
        o << ",\"rtt\":[";
        for (size_t k = 0; k < f.rtt.size(); k++)
            o << (k ? "," : "") << "[" << f.rtt[k].first << "," << f.rtt[k].second << "]";
        o << "]}";
    }
    o << "]}\n";
    o.close();
    Simulator::Destroy();
    return o ? 0 : 1;
}

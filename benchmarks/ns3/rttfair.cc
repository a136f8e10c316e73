// ns-3 side of the DOCSIS RTT-fairness cross-check (benchmarks/ns3/rtt_fairness.py), written
// against the public ns-3 3.44 API: N bulk TCP flows with different base RTTs share one
// bottleneck (a FIFO of --limit packets or CoDel), each flow on its own access link:
//   client_i --(1 Gbit/s, delays[i])-- r0 ==(--rate, --delay)== r1 --(1 Gbit/s, 0.1 ms)-- server_i
// Data flows client -> server (BulkSend -> PacketSink). Flows start uniformly at random in
// [0, --spread] s. Prints one JSON line: each flow's received bytes at every checkpoint
// (--checkpoints, seconds), so the goodput over [a, b] is (rx[b] - rx[a]) / (b - a).
//   usage: ns3-rttfair --delays=13.9ms,18.9ms,... [--rate=38Mbps] [--limit=2048]
//                      [--aqm=fifo|codel] [--target=20ms] [--interval=100ms]
//                      [--checkpoints=20,60,600] [--spread=2] [--seed=1]
//                      [--iw=10] [--delack=0.2] [--minrto=1] [--rcvbuf=16000000]
// TCP: ns-3's TcpNewReno with TcpClassicRecovery and SACK (the aqmlab "ns3" profile); --iw,
// --delack (DelAckTimeout, s) and --minrto (MinRto, s) change single socket attributes.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "topology.h"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

static std::vector<Ptr<PacketSink>> g_sinks;
static std::vector<std::vector<uint64_t>> g_rx; // [checkpoint][flow]

static void Snapshot(size_t k)
{
    for (size_t i = 0; i < g_sinks.size(); i++)
        g_rx[k][i] = g_sinks[i]->GetTotalRx();
}

static std::vector<std::string> Split(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            out.push_back(item);
    return out;
}

int main(int argc, char* argv[])
{
    std::string delays = "13.9ms,18.9ms,23.9ms,28.9ms,33.9ms";
    std::string rate = "38Mbps";
    std::string neckDelay = "1ms";
    std::string aqm = "fifo";
    std::string target = "20ms";
    std::string interval = "100ms";
    std::string checkpoints = "20,60";
    double spread = 2.0;
    uint32_t limit = 2048;
    uint32_t seed = 1;
    uint32_t iw = 10;
    double delack = 0.2;
    double minrto = 1.0;
    uint32_t rcvbuf = 16000000;
    CommandLine cmd;
    cmd.AddValue("delays", "one-way delay of each client's access link (comma list)", delays);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("delay", "bottleneck one-way delay", neckDelay);
    cmd.AddValue("aqm", "bottleneck qdisc: fifo or codel", aqm);
    cmd.AddValue("target", "CoDel target", target);
    cmd.AddValue("interval", "CoDel interval", interval);
    cmd.AddValue("limit", "bottleneck qdisc limit (packets)", limit);
    cmd.AddValue("checkpoints", "times (s) at which each sink's received bytes are recorded", checkpoints);
    cmd.AddValue("spread", "flows start uniformly in [0, spread] s", spread);
    cmd.AddValue("seed", "RngRun", seed);
    cmd.AddValue("iw", "TcpSocket::InitialCwnd (segments)", iw);
    cmd.AddValue("delack", "TcpSocket::DelAckTimeout (s)", delack);
    cmd.AddValue("minrto", "TcpSocketBase::MinRto (s)", minrto);
    cmd.AddValue("rcvbuf", "TcpSocket::RcvBufSize and SndBufSize (bytes)", rcvbuf);
    cmd.Parse(argc, argv);
    RngSeedManager::SetRun(seed);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(rcvbuf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcvbuf));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(iw));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Seconds(delack)));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(minrto)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    // Linux-like: no device queue beneath the qdisc beyond one packet
    Config::SetDefault("ns3::DropTailQueue<Packet>::MaxSize", StringValue("1p"));

    std::vector<std::string> d = Split(delays);
    uint32_t flows = d.size();
    std::vector<double> cps;
    for (const std::string& c : Split(checkpoints))
        cps.push_back(std::stod(c));
    double duration = cps.empty() ? 60.0 : cps.back();

    TrafficControlHelper q;
    std::string lim = std::to_string(limit) + "p";
    if (aqm == "codel")
        q.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", StringValue(lim), "Target", StringValue(target),
                           "Interval", StringValue(interval));
    else
        q.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(lim));
    Dumbbell db = BuildDumbbell(d, rate, neckDelay, q, 100000);
    std::vector<double> starts = StartBulkFlows(db, spread, &g_sinks);
    g_rx.assign(cps.size(), std::vector<uint64_t>(flows, 0));
    for (size_t k = 0; k < cps.size(); k++)
        Simulator::Schedule(Seconds(cps[k]) - NanoSeconds(1), &Snapshot, k);

    Simulator::Stop(Seconds(duration));
    Simulator::Run();

    std::printf("{\"simulator\":\"ns-3.44\",\"aqm\":\"%s\",\"seed\":%u,\"starts\":[", aqm.c_str(), seed);
    for (uint32_t i = 0; i < flows; i++)
        std::printf("%s%.6f", i ? "," : "", starts[i]);
    std::printf("],\"checkpoints\":[");
    for (size_t k = 0; k < cps.size(); k++)
        std::printf("%s%g", k ? "," : "", cps[k]);
    std::printf("],\"rx_bytes\":[");
    for (size_t k = 0; k < cps.size(); k++)
    {
        std::printf("%s[", k ? "," : "");
        for (uint32_t i = 0; i < flows; i++)
            std::printf("%s%llu", i ? "," : "", (unsigned long long)g_rx[k][i]);
        std::printf("]");
    }
    std::printf("]}\n");
    Simulator::Destroy();
    return 0;
}

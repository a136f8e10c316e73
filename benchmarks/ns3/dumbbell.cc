// ns-3 equivalent of benchmarks/scenarios/tcp16_codel.toml (the aqmlab headline), written
// against the public ns-3 3.44 API: N NewReno bulk flows, client_i -- router_a ==
// bottleneck == router_b -- server_i, CoDel (Linux defaults) on both bottleneck egresses,
// 1 Gbit/s 0.1 ms access links, 10 Mbit/s 5 ms bottleneck, random starts within 1 s.
// Prints one JSON line: wall seconds, bottleneck packets (both directions, dequeued by
// the bottleneck qdiscs), utilisation of the up direction, mean/p99 CoDel sojourn and the
// up qdisc's drops per second, the senders' fast recoveries and RTOs per second, after the
// warm-up.
//   usage: ns3-dumbbell [--flows=16] [--duration=100] [--warmup=10] [--rate=10Mbps]
//                       [--aqm=codel|pie|fifo] [--recovery=classic|prr]
//                       [--cc=TcpNewReno|TcpLinuxReno|TcpBbr] [--limit=1000] [--delay=5ms]
// --aqm=pie installs ns3::PieQueueDisc with its defaults (RFC 8033: 15 ms, 15 ms, 150 ms
// burst, timestamp delay); --recovery=classic (ns3::TcpClassicRecovery, the aqmlab "ns3"
// stack profile) or prr (ns-3's default TcpPrrRecovery). --aqm=fifo is a FifoQueueDisc of
// --limit packets (the qdiscs' limit too); --delay is the bottleneck's one-way delay.
// --cc=TcpBbr turns on ns-3's TCP pacing (TcpSocketState::EnablePacing), which BBR needs.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "topology.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace ns3;

static std::vector<double> g_sojourn;
static double g_warmup = 10.0;
static uint64_t g_txBytesUp = 0;

static void Sojourn(Time t)
{
    if (Simulator::Now().GetSeconds() >= g_warmup)
        g_sojourn.push_back(t.GetSeconds());
}

// drops by the up bottleneck's qdisc after the warm-up (on arrival and, CoDel, at dequeue)
static uint64_t g_drops = 0;

static void QdiscDrop(Ptr<const QueueDiscItem>, const char*)
{
    if (Simulator::Now().GetSeconds() >= g_warmup)
        g_drops++;
}

// the senders' entries into fast recovery and into loss recovery (RTO) after the warm-up
static uint64_t g_recoveries = 0;
static uint64_t g_rtos = 0;

static void CongState(TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to)
{
    if (Simulator::Now().GetSeconds() < g_warmup || from == to)
        return;
    if (to == TcpSocketState::CA_RECOVERY)
        g_recoveries++;
    else if (to == TcpSocketState::CA_LOSS)
        g_rtos++;
}

static void ConnectCongState()
{
    Config::ConnectWithoutContext("/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/CongState", MakeCallback(&CongState));
}

static void PhyTxEnd(Ptr<const Packet> p)
{
    if (Simulator::Now().GetSeconds() >= g_warmup)
        g_txBytesUp += p->GetSize();
}

int main(int argc, char* argv[])
{
    uint32_t flows = 16;
    double duration = 100.0;
    std::string rate = "10Mbps";
    std::string aqm = "codel";
    std::string recovery = "classic";
    std::string cc = "TcpNewReno";
    uint32_t seed = 1;
    uint32_t limit = 1000;
    std::string delay = "5ms";
    double redMin = 30;
    double redMax = 90;
    CommandLine cmd;
    cmd.AddValue("aqm", "bottleneck qdisc: codel, pie, fifo, fq_codel, fq_pie or ared (RedQueueDisc as ns-2's ARED)", aqm);
    cmd.AddValue("redmin", "ared: min threshold (packets)", redMin);
    cmd.AddValue("redmax", "ared: max threshold (packets)", redMax);
    cmd.AddValue("recovery", "classic (TcpClassicRecovery) or prr (TcpPrrRecovery)", recovery);
    cmd.AddValue("cc", "TcpNewReno or TcpLinuxReno", cc);
    cmd.AddValue("seed", "RngRun", seed);
    cmd.AddValue("flows", "bulk flows", flows);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("warmup", "warm-up seconds", g_warmup);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("limit", "bottleneck qdisc limit (packets)", limit);
    cmd.AddValue("delay", "bottleneck one-way delay", delay);
    cmd.Parse(argc, argv);
    RngSeedManager::SetRun(seed);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + cc));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TypeId::LookupByName(recovery == "prr" ? "ns3::TcpPrrRecovery"
                                                                          : "ns3::TcpClassicRecovery")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 22));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 22));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    if (cc == "TcpBbr")
        Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
    // Linux-like: no ns-3 "drop tail" device queue beneath the qdisc beyond one packet
    Config::SetDefault("ns3::DropTailQueue<Packet>::MaxSize", StringValue("1p"));

    TrafficControlHelper codel;
    std::string lim = std::to_string(limit) + "p";
    if (aqm == "pie")
        codel.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", StringValue(lim));
    else if (aqm == "ared")
        // ns-3's RedQueueDisc is a port of ns-2's Queue/RED: set what ns-2.35's defaults and
        // its Adaptive RED would be (wait_, gentle_, linterm_ 10, mean_pktsize_ 500,
        // q_weight_ 0 = 1 - exp(-1/C), max_p adapted every 0.5 s), with ns-2's automatic
        // bottom min(0.01, 80000/bw) (ns-3 derives its own from an RTT attribute instead)
        codel.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize", StringValue(lim),
                               "MeanPktSize", UintegerValue(500), "Wait", BooleanValue(true),
                               "Gentle", BooleanValue(true), "AdaptMaxP", BooleanValue(true),
                               "QW", DoubleValue(0.0), "LInterm", DoubleValue(10),
                               "MinTh", DoubleValue(redMin), "MaxTh", DoubleValue(redMax),
                               "LinkBandwidth", DataRateValue(DataRate(rate)),
                               "LinkDelay", TimeValue(Time(delay)),
                               "Bottom", DoubleValue(std::min(0.01, 80000.0 / DataRate(rate).GetBitRate())));
    else if (aqm == "fifo")
        codel.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(lim));
    else if (aqm == "fq_codel")
        // 1024 flows, 5 ms / 100 ms, drop batch 64, quantum = the device MTU (1500);
        // UseEcn is moot: the sockets do not negotiate ECN
        codel.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", StringValue(lim));
    else if (aqm == "fq_pie")
        // Linux sch_fq_pie's defaults (15 ms / 15 ms, alpha 0.125, beta 1.25, 1024 flows)
        codel.SetRootQueueDisc("ns3::FqPieQueueDisc", "MaxSize", StringValue(lim));
    else
        codel.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", StringValue(lim));
    Dumbbell d = BuildDumbbell(std::vector<std::string>(flows, "0.1ms"), rate, delay, codel, 1000);
    QueueDiscContainer qd = d.neckQueues;
    NetDeviceContainer nb = d.neck;
    StartBulkFlows(d, 1.0);
    qd.Get(0)->TraceConnectWithoutContext("SojournTime", MakeCallback(&Sojourn));
    nb.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&PhyTxEnd));
    qd.Get(0)->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(&QdiscDrop));
    qd.Get(0)->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&QdiscDrop));

    // every bulk socket exists once the last flow has started (within the first second)
    Simulator::Schedule(Seconds(1.001), &ConnectCongState);
    Simulator::Stop(Seconds(duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    uint64_t pkts = qd.Get(0)->GetStats().nTotalDequeuedPackets + qd.Get(1)->GetStats().nTotalDequeuedPackets;
    std::sort(g_sojourn.begin(), g_sojourn.end());
    double mean = 0;
    for (double s : g_sojourn)
        mean += s;
    mean = g_sojourn.empty() ? 0 : mean / g_sojourn.size();
    double p99 = g_sojourn.empty() ? 0 : g_sojourn[std::min(g_sojourn.size() - 1, (size_t)(0.99 * g_sojourn.size()))];
    // the up device's PhyTxEnd sees the PPP frame (IP + 2 bytes PPP header)
    double util = g_txBytesUp * 8.0 / (DataRate(rate).GetBitRate() * (duration - g_warmup));
    std::printf("{\"simulator\":\"ns-3.44\",\"aqm\":\"%s\",\"sim_seconds\":%g,\"bottleneck_packets\":%llu,\"wall_seconds\":%.4f,"
                "\"packets_per_second\":%.0f,\"utilization\":%.4f,\"sojourn_mean\":%.6f,\"sojourn_p99\":%.6f,"
                "\"drops_per_second\":%.3f,\"recoveries_per_second\":%.3f,\"rtos_per_second\":%.3f}\n",
                aqm.c_str(), duration, (unsigned long long)pkts, wall, pkts / wall, util, mean, p99,
                g_drops / (duration - g_warmup), g_recoveries / (duration - g_warmup), g_rtos / (duration - g_warmup));
    Simulator::Destroy();
    return 0;
}

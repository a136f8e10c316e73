// ns-3 side of the WiFi peer check (compare_wifi.py), written against the public ns-3 3.44
// API: server --(100 Mbit/s, --delay)-- AP ~~ 802.11n ~~ station.
// 802.11n on a 20 MHz 5 GHz channel (36), 800 ns guard interval, ConstantRateWifiManager
// with the AP sending HtMcs<--apmcs> (two spatial streams) and the station HtMcs<--stamcs>
// (one transmit stream), block acks at OfdmRate24Mbps, EDCA best effort (AIFSN 3, CWmin
// 15, CWmax 1023, no TXOP), A-MPDUs up to 65535 bytes (ns-3's HT default) in a 64-frame
// block-ack window. The station is 5 m from the AP (Yans default propagation: ~-52 dBm,
// far above what MCS 15 needs: no frame errors). Below the qdisc each WiFi device holds a
// WifiMacQueue of --macqueue packets, which stops the qdisc above it when full.
// Qdiscs: ns-3's default for every device (fq_codel; mq with fq_codel per access category
// on the WiFi devices). TCP: NewReno with classic recovery, SACK, 1448-byte segments,
// 4 MiB buffers.
// Cases (--mode): down (bulk server -> station), up (station -> server), both; each with a
// ping from the station to the server every 100 ms. --uptos sets the IPv4 TOS byte of the
// upload's packets both ways (its data at the station, its ACKs at the server): ns-3's
// WifiNetDevice::SelectQueue takes the user priority from the DS field's top three bits
// (as mac80211 does), so --uptos=160 (CS5) sends the upload as AC_VI; every access
// category then contends with ns-3's EDCA table (VI: AIFSN 2, CW 7-15, TXOP 3.008 ms).
// --rootqdisc=1 replaces ns-3's default mq (an fq_codel per access category) on the WiFi
// devices by one root fq_codel, as a Linux interface has after `tc qdisc replace ... root`.
// Prints one JSON line: goodput down/up after the warm-up, mean ping RTT after the warm-up.
//   usage: ns3-wifi [--mode=down|up|both] [--duration=30] [--warmup=5] [--apmcs=15]
//                   [--stamcs=7] [--macqueue=500] [--delay=10ms] [--seed=1] [--uptos=0]
//                   [--rootqdisc=0]
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-apps-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace ns3;

static double g_warmup = 5.0;
static double g_rttSum = 0;
static uint64_t g_rttN = 0;

static void Rtt(uint16_t, Time rtt)
{
    if (Simulator::Now().GetSeconds() >= g_warmup)
    {
        g_rttSum += rtt.GetSeconds();
        g_rttN++;
    }
}

static uint64_t g_rx0[2] = {0, 0};
static uint64_t g_tx[4] = {0, 0, 0, 0};
static void TxCount(uint64_t* c, Ptr<const Packet>, double) { (*c)++; }
static void TxCount2(uint64_t* c, Ptr<const Packet>) { (*c)++; }

int main(int argc, char* argv[])
{
    std::string mode = "down";
    double duration = 30.0;
    uint32_t apMcs = 15, staMcs = 7, macQueue = 500, seed = 1;
    std::string delay = "10ms";
    CommandLine cmd;
    cmd.AddValue("mode", "down, up or both", mode);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("warmup", "warm-up seconds", g_warmup);
    cmd.AddValue("apmcs", "the AP's HT MCS", apMcs);
    cmd.AddValue("stamcs", "the station's HT MCS", staMcs);
    cmd.AddValue("macqueue", "WifiMacQueue size (packets)", macQueue);
    cmd.AddValue("delay", "one-way delay of the wired link", delay);
    cmd.AddValue("seed", "RngRun", seed);
    uint32_t upTos = 0;
    cmd.AddValue("uptos", "IPv4 TOS byte of the upload's packets, both ways", upTos);
    bool rootQdisc = false;
    cmd.AddValue("rootqdisc", "one fq_codel as the root qdisc of each WiFi device (not mq)", rootQdisc);
    cmd.Parse(argc, argv);
    RngSeedManager::SetRun(seed);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 22));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 22));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::DropTailQueue<Packet>::MaxSize", StringValue("1p"));
    Config::SetDefault("ns3::WifiMacQueue::MaxSize", StringValue(std::to_string(macQueue) + "p"));
    // no lifetime drops in the MAC queue (ns-3's default discards packets older than 500 ms)
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(Seconds(100)));

    NodeContainer nodes;
    nodes.Create(3); // 0 server, 1 AP, 2 station
    Ptr<Node> server = nodes.Get(0), ap = nodes.Get(1), sta = nodes.Get(2);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("100Mbps"));
    p2p.SetChannelAttribute("Delay", StringValue(delay));
    NetDeviceContainer wired = p2p.Install(server, ap);

    YansWifiChannelHelper channel = YansWifiChannelHelper::Default();
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    phy.Set("ChannelSettings", StringValue("{36, 20, BAND_5GHZ, 0}"));
    phy.Set("Antennas", UintegerValue(2));
    phy.Set("MaxSupportedTxSpatialStreams", UintegerValue(2));
    phy.Set("MaxSupportedRxSpatialStreams", UintegerValue(2));
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211n);
    WifiMacHelper mac;
    Ssid ssid("aqmlab");
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager", "DataMode", StringValue("HtMcs" + std::to_string(apMcs)),
                                 "ControlMode", StringValue("OfdmRate24Mbps"));
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid));
    NetDeviceContainer apDev = wifi.Install(phy, mac, ap);
    // (the station keeps two transmit streams in its PHY: ns-3 stops delivering MCS 15 to a
    // station whose PHY has one; its ConstantRateWifiManager sends HtMcs<stamcs>, one
    // stream for MCS 0-7, as the Intel 5100's single transmit chain does)
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager", "DataMode", StringValue("HtMcs" + std::to_string(staMcs)),
                                 "ControlMode", StringValue("OfdmRate24Mbps"));
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid));
    NetDeviceContainer staDev = wifi.Install(phy, mac, sta);

    MobilityHelper mob;
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    pos->Add(Vector(0, 0, 0));
    pos->Add(Vector(0, 0, 0));
    pos->Add(Vector(5, 0, 0));
    mob.SetPositionAllocator(pos);
    mob.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mob.Install(nodes);

    InternetStackHelper stack;
    stack.Install(nodes);
    if (rootQdisc)
    {
        // one fq_codel above all four access-category queues, as `tc qdisc replace dev
        // wlan0 root fq_codel` leaves a Linux WiFi interface: a packet for a stopped
        // queue is requeued and holds the qdisc (before Assign installs the default mq)
        TrafficControlHelper tch;
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc");
        tch.Install(apDev);
        tch.Install(staDev);
    }
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer wiredIf = addr.Assign(wired);
    addr.SetBase("10.1.2.0", "255.255.255.0");
    addr.Assign(apDev);
    Ipv4InterfaceContainer staIf = addr.Assign(staDev);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // sinks: [0] at the station (down), [1] at the server (up)
    Ptr<PacketSink> sinks[2];
    Ptr<Node> sinkNode[2] = {sta, server};
    Ptr<Node> srcNode[2] = {server, sta};
    Ipv4Address sinkAddr[2] = {staIf.GetAddress(0), wiredIf.GetAddress(0)};
    bool on[2] = {mode == "down" || mode == "both", mode == "up" || mode == "both"};
    for (int d = 0; d < 2; d++)
    {
        if (!on[d])
            continue;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000 + d));
        ApplicationContainer sa = sink.Install(sinkNode[d]);
        sa.Start(Seconds(0));
        sinks[d] = DynamicCast<PacketSink>(sa.Get(0));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sinkAddr[d], 5000 + d));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        ApplicationContainer a = bulk.Install(srcNode[d]);
        a.Start(Seconds(0.5 + 0.1 * d));
        if (d == 1 && upTos != 0)
        {
            // the station's socket exists once the application started; the server's
            // once it accepted the connection (one RTT later)
            Ptr<BulkSendApplication> app = DynamicCast<BulkSendApplication>(a.Get(0));
            Ptr<PacketSink> sink = sinks[1];
            Simulator::Schedule(Seconds(0.6) + NanoSeconds(1), [app, upTos]() {
                app->GetSocket()->SetIpTos(static_cast<uint8_t>(upTos));
            });
            Simulator::Schedule(Seconds(1.0), [sink, upTos]() {
                for (Ptr<Socket> so : sink->GetAcceptedSockets())
                    so->SetIpTos(static_cast<uint8_t>(upTos));
            });
        }
    }
    PingHelper ping(wiredIf.GetAddress(0));
    ping.SetAttribute("Interval", TimeValue(MilliSeconds(100)));
    ping.SetAttribute("Size", UintegerValue(56));
    // Ping reserves room for Count replies up front (its default, 2^32 - 1, cannot be)
    ping.SetAttribute("Count", UintegerValue(static_cast<uint32_t>(duration * 10) + 10));
    ping.SetAttribute("VerboseMode", EnumValue(Ping::VerboseMode::SILENT));
    ApplicationContainer pa = ping.Install(sta);
    pa.Start(Seconds(0.3));
    pa.Get(0)->TraceConnectWithoutContext("Rtt", MakeCallback(&Rtt));

    if (std::getenv("WIFI_DEBUG"))
    {
        DynamicCast<WifiNetDevice>(apDev.Get(0))->GetPhy()->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&TxCount, &g_tx[0]));
        DynamicCast<WifiNetDevice>(staDev.Get(0))->GetPhy()->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&TxCount, &g_tx[1]));
        wired.Get(0)->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&TxCount2, &g_tx[2]));
        wired.Get(1)->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&TxCount2, &g_tx[3]));
    }
    Simulator::Schedule(Seconds(g_warmup), [&]() {
        for (int d = 0; d < 2; d++)
            if (sinks[d])
                g_rx0[d] = sinks[d]->GetTotalRx();
    });
    Simulator::Stop(Seconds(duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double span = duration - g_warmup;
    double g[2];
    for (int d = 0; d < 2; d++)
        g[d] = sinks[d] ? (sinks[d]->GetTotalRx() - g_rx0[d]) * 8.0 / span : 0.0;
    std::printf("{\"simulator\":\"ns-3.44\",\"mode\":\"%s\",\"goodput_down\":%.0f,\"goodput_up\":%.0f,"
                "\"ping_mean\":%.6f,\"ping_n\":%llu,\"wall_seconds\":%.3f}\n",
                mode.c_str(), g[0], g[1], g_rttN ? g_rttSum / g_rttN : -1.0, (unsigned long long)g_rttN, wall);
    if (std::getenv("WIFI_DEBUG"))
    {
        auto sm = DynamicCast<StaWifiMac>(DynamicCast<WifiNetDevice>(staDev.Get(0))->GetMac());
        std::fprintf(stderr, "associated %d, ping n %llu, tx ap %llu sta %llu srv %llu apwired %llu\n", sm->IsAssociated(), (unsigned long long)g_rttN,
                     (unsigned long long)g_tx[0], (unsigned long long)g_tx[1], (unsigned long long)g_tx[2], (unsigned long long)g_tx[3]);
    }
    Simulator::Destroy();
    return 0;
}

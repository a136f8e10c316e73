// The dumbbell both ns-3 programs build (dumbbell.cc, rttfair.cc), in one place:
//   client_i --(1 Gbit/s, clientDelay[i])-- r0 ==(rate, neckDelay; neckQ)== r1 --(1 Gbit/s, 0.1 ms)-- server_i
// Access links carry a FIFO qdisc of accessLimit packets. Addresses: 10.255.0.0/24 on the
// bottleneck, 10.(1 + i/250).(i%250).0/24 on client i's link, 10.(101 + i/250).(i%250).0/24
// on server i's. Nodes, devices, qdiscs and applications are created in the order the two
// programs always used, so ns-3's random streams (and every result) stay the same.
#pragma once

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <string>
#include <vector>

struct Dumbbell
{
    ns3::NodeContainer clients, servers, routers;
    ns3::NetDeviceContainer neck;         // r0 -> r1 is device 0 (the "up" direction)
    ns3::QueueDiscContainer neckQueues;   // the bottleneck qdisc of each direction
    std::vector<ns3::Ipv4Address> serverAddr;
};

inline Dumbbell BuildDumbbell(const std::vector<std::string>& clientDelay, const std::string& rate,
                              const std::string& neckDelay, ns3::TrafficControlHelper& neckQ,
                              uint32_t accessLimit)
{
    using namespace ns3;
    Dumbbell d;
    uint32_t flows = clientDelay.size();
    d.clients.Create(flows);
    d.servers.Create(flows);
    d.routers.Create(2);
    InternetStackHelper stack;
    stack.InstallAll();

    PointToPointHelper neck;
    neck.SetDeviceAttribute("DataRate", StringValue(rate));
    neck.SetChannelAttribute("Delay", StringValue(neckDelay));
    TrafficControlHelper access;
    access.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(accessLimit) + "p"));

    Ipv4AddressHelper addr;
    d.neck = neck.Install(d.routers.Get(0), d.routers.Get(1));
    d.neckQueues = neckQ.Install(d.neck);
    addr.SetBase("10.255.0.0", "255.255.255.0");
    addr.Assign(d.neck);
    for (uint32_t i = 0; i < flows; i++)
    {
        PointToPointHelper ca;
        ca.SetDeviceAttribute("DataRate", StringValue("1Gbps"));
        ca.SetChannelAttribute("Delay", StringValue(clientDelay[i]));
        PointToPointHelper sa;
        sa.SetDeviceAttribute("DataRate", StringValue("1Gbps"));
        sa.SetChannelAttribute("Delay", StringValue("0.1ms"));
        NetDeviceContainer c = ca.Install(d.clients.Get(i), d.routers.Get(0));
        NetDeviceContainer s = sa.Install(d.routers.Get(1), d.servers.Get(i));
        access.Install(c);
        access.Install(s);
        char base[32];
        std::snprintf(base, sizeof base, "10.%u.%u.0", 1 + i / 250, i % 250);
        addr.SetBase(base, "255.255.255.0");
        addr.Assign(c);
        std::snprintf(base, sizeof base, "10.%u.%u.0", 101 + i / 250, i % 250);
        addr.SetBase(base, "255.255.255.0");
        d.serverAddr.push_back(addr.Assign(s).GetAddress(1));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    return d;
}

// One unlimited bulk TCP flow per pair, client_i -> server_i (BulkSend -> PacketSink on
// port 5000), each started uniformly at random in [0, spread] s. Returns the start times;
// the sinks go to *sinks when it is given.
inline std::vector<double> StartBulkFlows(const Dumbbell& d, double spread,
                                          std::vector<ns3::Ptr<ns3::PacketSink>>* sinks = nullptr)
{
    using namespace ns3;
    Ptr<UniformRandomVariable> start = CreateObject<UniformRandomVariable>();
    std::vector<double> starts;
    for (uint32_t i = 0; i < d.clients.GetN(); i++)
    {
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
        ApplicationContainer sa = sink.Install(d.servers.Get(i));
        sa.Start(Seconds(0));
        if (sinks)
            sinks->push_back(DynamicCast<PacketSink>(sa.Get(0)));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(d.serverAddr[i], 5000));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        ApplicationContainer a = bulk.Install(d.clients.Get(i));
        starts.push_back(start->GetValue(0.0, spread));
        a.Start(Seconds(starts.back()));
    }
    return starts;
}

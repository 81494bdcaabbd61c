"""What a supervised program may reach: the sandbox's paths and ports, its limits, a private
CLI home, the user's checkout.
"""
